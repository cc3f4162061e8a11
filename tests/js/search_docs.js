// The entries (as search documents) that the search tests of tests/js search. Shared by the
// Node tests; not a test file itself.
'use strict';
const { doc } = require('./search_site.js');

const LONG_SUMMARY = 'The caching allocator could not find a free block of the size asked for. ' +
  'Fragmentation leaves free memory in pieces too small for the request, so the total free ' +
  'memory the message reports can exceed the request while it still fails. Set ' +
  'expandable_segments to let the allocator grow segments instead.';

/* Entries in id order, as the build writes them; and their tags ([slug, title, entries]). */
const DOCS = [
  doc('bf16-dtype-mismatch', 'Expected scalar type BFloat16 but found Float under FSDP', {
    tags: ['bf16', 'fsdp'],
    errors: ['RuntimeError: expected scalar type BFloat16 but found Float'],
    summary: 'Weights in bf16 meet inputs in fp32. The cast in the model code is wrong.',
    symptoms: ['The first linear layer raises a dtype error'],
    causes: ['Model code casts to self.dtype']
  }),
  doc('cuda-oom', 'CUDA out of memory', {
    tags: ['memory'],
    errors: ['torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB'],
    summary: LONG_SUMMARY,
    symptoms: ['Training stops at the first step of a larger batch'],
    causes: ['Fragmentation of the caching allocator']
  }),
  doc('dataloader-killed', 'DataLoader worker killed: "Caught ... in DataLoader worker process"', {
    errors: ['Caught ... in DataLoader worker process'],
    mentions: ['RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed.'],
    summary: 'The kernel killed a worker that ran out of host memory.',
    causes: ['Host memory runs out']
  }),
  doc('exit-minus-eleven', 'Worker segfaults', {
    errors: ['ChildFailedError: failed (exitcode: -11) local_rank: 0 (pid: 100) of binary: /usr/bin/python'],
    summary: 'A rank died of a segmentation fault.',
    aliases: ['segfault-loss']
  }),
  doc('exit-minus-nine', 'Worker killed by the OOM killer', {
    errors: ['ChildFailedError: failed (exitcode: -9) local_rank: 0 (pid: 100) of binary: /usr/bin/python'],
    summary: 'The kernel killed a rank that ran out of host memory.'
  }),
  doc('man-page', 'Man page of the launcher', {
    summary: 'The launcher has a man page.'
  }),
  doc('nan-loss', 'Loss becomes nan', {
    tags: ['numerics'],
    errors: ["RuntimeError: Function 'MulBackward0' returned nan values in its 0th output."],
    mentions: ['Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE) ran for 600000 milliseconds'],
    summary: "The loss turns to nan: it's an overflow.",
    aliases: ['loss-nan-old']
  }),
  doc('nccl-timeout', 'NCCL collective timeout', {
    tags: ['nccl', 'distributed'],
    errors: ['Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.'],
    summary: 'A rank stopped joining collectives and the others waited.',
    symptoms: ['Every rank hangs and then times out']
  })
];
const TAGS = [['bf16', 'bf16', 1], ['distributed', 'Distributed training', 1], ['fsdp', 'FSDP', 1],
  ['memory', 'Memory', 1], ['nccl', 'NCCL', 2], ['numerics', 'Numerics', 1]];

module.exports = { DOCS, TAGS, LONG_SUMMARY };
