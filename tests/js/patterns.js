// Fingerprint patterns that exercise the browser worker's translation to JavaScript and its
// literal prefilter, each with lines to try it on. Shared by the Node tests; not a test file.
'use strict';

/* [id, pattern, lines to try it on, ignore case]: escapes, classes, groups, alternatives,
   quantifiers, case, and literals inside one another. */
const PATTERNS = [
  ['space', 'a\\sb', ['a b', 'a\tb', 'a\x0bb', 'a\u00a0b', 'ab']],
  ['not-space', 'c\\Sd', ['cxd', 'c d', 'c\u00a0d', 'c\x0bd']],
  ['space-in-class', 'e[\\s,]f', ['e f', 'e,f', 'e\u00a0f', 'exf']],
  ['not-space-in-class', 'g[^\\S]h', ['g h', 'gxh', 'g\u00a0h']],
  ['dot', 'i.j', ['ixj', 'i\u2028j', 'ij']],
  ['bracket-first', '[]k]lmn', [']lmn', 'klmn', 'almn']],
  ['not-bracket-first', '[^]k]opq', [']opq', 'kopq', 'aopq']],
  ['hex', '\\x41BCD', ['ABCD', 'xBCD']],
  ['alternatives-in-group', '(?:abc|def)ghi', ['abcghi', 'defghi', 'xyzghi']],
  ['nested-group', '(?:(?:jklm|nopq))', ['jklm', 'nopq', 'rstu']],
  ['groups-not-one', '(?:vwx)|(?:yza)', ['vwx', 'yza', 'vw']],
  ['optional-first-group', '(?:abc)?defg', ['defg', 'abcdefg']],
  ['escaped-dot', 'foo\\.bar', ['foo.bar', 'fooxbar']],
  ['optional-group', 'err(?:or)? code \\d+', ['err code 5', 'error code 12', 'erro code 1']],
  ['count', 'x{2,3}yzzy', ['xxyzzy', 'xyzzy', 'yzzy']],
  ['optional-letter', 'abc?def', ['abdef', 'abcdef', 'acdef']],
  ['star', 'uvw*xyz', ['uvxyz', 'uvwwwxyz']],
  ['plus', 'pq+rst', ['pqqqrst', 'prst']],
  ['alternation', 'timeout|hang(?:ed)?', ['timed out', 'a timeout', 'hanged', 'hang']],
  ['alternative-without-literal', 'zebra|\\d\\d', ['zebra', '42', 'z']],
  ['escaped-pipe', 'a\\|b c', ['a|b c', 'a b c']],
  ['escaped-punctuation', 'r\\-s\\:t\\[u', ['r-s:t[u', 'r s t u']],
  ['bracket-in-class', '[[]wx', ['[wx', 'wx']],
  ['escape-in-class', 'y[\\]]zz', ['y]zz', 'yzz']],
  ['escape-in-class-then-more', 'y[\\]x]zz', ['yxzz', 'y]zz', 'yx]zz']],
  ['class-then-bracket', '[a]]xyz', ['a]xyz', 'axyz', 'a]]xyz']],
  ['rank-prefix', '\\[rank\\d+\\]: oops', ['[rank3]: oops', '[rank]: oops']],
  ['case-sensitive', 'ABCdef', ['ABCdef', 'abcdef', 'xABCDEF']],
  ['ignore-case', 'cuda error', ['CUDA ERROR', 'Cuda Error', 'cuda  error'], true],
  ['last-character', '[M]$', ['BOOM', 'MA']],
  ['ignore-case-z', 'fizz buzz', ['FIZZ BUZZ', 'Fizz Buzz', 'fizz fuzz'], true],
  ['tilde', 'abc~def', ['abc~def', 'abc def']],
  ['ignore-case-ascii-only', 'kernel panic', ['Kernel panic', '\u212Aernel panic', 'KERNEL PANIC'], true],
  ['inside-others-1', 'abcdx', ['abcdx', 'abcdy', 'xabcdz']],
  ['inside-others-2', 'bcdy', ['bcdy']],
  ['inside-others-3', 'cdz', ['cdz']],
  ['longer-than-a-literal', 'averyveryverylongliteralword', ['averyveryverylongliteralword', 'averyveryverylong']]
];

module.exports = { PATTERNS };
