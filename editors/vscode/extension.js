// Nanopedia in VS Code: diagnoses a selection, a log file or the last output of a terminal with
// the site's diagnosis engine and data (engine/, copied from the project's build when the
// extension is packaged), in the extension host, offline. The answer opens beside the log; the
// log's decisive and collateral lines are marked, with a code lens and a status-bar item on the
// first failing line. This file is the VS Code side only: lib/ holds the logic.
'use strict';
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const vscode = require('vscode');
const { Engine } = require('./lib/engine');
const { parseData, mergeData, entryIds } = require('./lib/data');
const { verdict, marks, verifyCommand } = require('./lib/verdict');
const { article, movedTo, target } = require('./lib/page');
const { answerHtml } = require('./lib/view');
const { Recorder, unusable } = require('./lib/terminal');
const { editorLines, engineText, readLog } = require('./lib/lines');
const { jobHost } = require('./lib/hosts');
const { Marker } = require('./lib/marker');

const ENGINE = path.join(__dirname, 'engine');
const EXPORTED = path.join('.nanopedia', 'diagnose-data.js');
/* The output of a terminal command kept for diagnosis: its last characters. */
const TERMINAL_LIMIT = 32 << 20;
/* Read-only documents holding the terminal output that was diagnosed. */
const OUTPUT_SCHEME = 'nanopedia-output';
const KEPT_OUTPUTS = 4;

let state = null;

function activate(context) {
  state = { context, shipped: null, merged: null, engine: null, panel: null, answer: null, recorder: new Recorder(TERMINAL_LIMIT) };
  state.marker = new Marker(vscode, context);
  state.outputs = 0;
  state.outputText = new Map();
  context.subscriptions.push(vscode.workspace.registerTextDocumentContentProvider(OUTPUT_SCHEME, {
    provideTextDocumentContent: (uri) => state.outputText.get(uri.toString()) || ''
  }));
  const command = (name, run) => context.subscriptions.push(vscode.commands.registerCommand(name,
    (...args) => run(...args).catch((err) => vscode.window.showErrorMessage(`Nanopedia: ${err.message}`))));
  command('nanopedia.diagnoseSelection', diagnoseSelection);
  command('nanopedia.diagnoseFile', diagnoseFiles);
  command('nanopedia.diagnoseTerminal', diagnoseTerminal);
  command('nanopedia.revealFirstFailure', async () => state.marker.revealFirst());
  command('nanopedia.showAnswer', async () => { if (state.answer) render(state.answer.shown); });
  command('nanopedia.clear', async () => state.marker.clear());
  if (vscode.window.onDidStartTerminalShellExecution) {
    context.subscriptions.push(
      vscode.window.onDidStartTerminalShellExecution((e) => {
        state.recorder.start(e.terminal, e.execution).catch(() => {});
      }),
      vscode.window.onDidEndTerminalShellExecution((e) => state.recorder.end(e.terminal, e.execution, e.exitCode)),
      vscode.window.onDidCloseTerminal((t) => state.recorder.forget(t)));
  }
}

function deactivate() {
  if (state && state.panel) state.panel.dispose();
  if (state && state.engine) state.engine.dispose();
  state = null;
}

/* ---- Data: the shipped export, and a team's entries folder. ---- */

function settings() {
  return vscode.workspace.getConfiguration('nanopedia');
}

/** The team's entries folder of the settings, absolute, or null. */
function extraFolder() {
  const raw = (settings().get('extraEntries') || '').trim();
  if (!raw) return null;
  const home = raw.replace(/^~(?=$|\/)/, process.env.HOME || '~');
  const base = vscode.workspace.workspaceFolders && vscode.workspace.workspaceFolders[0];
  return path.isAbsolute(home) || !base ? home : path.join(base.uri.fsPath, home);
}

/** {data, extra: {folder, ids}|null}: the data the engine gets, with the team's entries. */
function loadData() {
  if (!state.shipped) {
    const file = path.join(ENGINE, 'diagnose-data.js');
    state.shipped = parseData(fs.readFileSync(file, 'utf8'), file);
  }
  const folder = extraFolder();
  if (!folder) return { data: state.shipped, extra: null };
  const file = path.join(folder, EXPORTED);
  const run = `nanopedia export --entries ${JSON.stringify(folder)}`;
  if (!fs.existsSync(file)) {
    offerExport(`${folder} has no exported data yet, so its entries are left out. Run \`${run}\`.`, run);
    return { data: state.shipped, extra: null };
  }
  const stat = fs.statSync(file);
  const newer = fs.readdirSync(folder).filter((n) => /\.ya?ml$/.test(n))
    .some((n) => fs.statSync(path.join(folder, n)).mtimeMs > stat.mtimeMs);
  if (newer) offerExport(`${file} is older than some entries of ${folder}; run \`${run}\` again.`, run);
  // The merged data is kept while the export is the same file, so the engine kept for it is too.
  const key = `${file}\0${stat.mtimeMs}\0${stat.size}`;
  if (!state.merged || state.merged.key !== key) {
    const extra = parseData(fs.readFileSync(file, 'utf8'), file);
    state.merged = { key, data: mergeData(state.shipped, extra, file), ids: new Set(entryIds(extra)) };
  }
  return { data: state.merged.data, extra: { folder, ids: state.merged.ids } };
}

function offerExport(message, run) {
  vscode.window.showWarningMessage(`Nanopedia: ${message}`, 'Run in a terminal').then((pick) => {
    if (!pick) return;
    const terminal = vscode.window.createTerminal('nanopedia export');
    terminal.show();
    terminal.sendText(run);
  });
}

/* ---- Diagnosing. ---- */

/** Runs the engine on `logs`: [{name, uri?, disk?, text?, offset?}], then shows the answer. */
async function run(logs) {
  const { data, extra } = loadData();
  const budgetMs = Math.max(1, Number(settings().get('budgetSeconds')) || 300) * 1000;
  const total = logs.reduce((n, l) => n + (l.disk ? fs.statSync(l.disk).size : l.text.length), 0);
  const result = await vscode.window.withProgress({
    location: vscode.ProgressLocation.Notification, title: 'Nanopedia', cancellable: true
  }, (progress, token) => {
    let told = 0;
    progress.report({ message: `reading ${logs.length} log(s), ${mb(total)}` });
    return engineFor(data).diagnose({
      budgetMs,
      files: logs.map((l) => ({ name: l.name, path: l.disk || l.name, disk: l.disk, text: l.text })),
      cancelled: () => token.isCancellationRequested,
      onProgress(done, all, file) {
        progress.report({ message: `${file}: ${mb(done)} of ${mb(all)}`, increment: ((done - told) / Math.max(all, 1)) * 100 });
        told = done;
      }
    });
  });
  const found = verdict(result, data);
  if (found) {
    const chunks = (log) => () => (log.disk ? readLog(log.disk) : [Buffer.from(log.text)]);
    [found.host, found.hostRule] = await jobHost(result, logs.map((l) => ({ name: l.name, chunks: chunks(l) })), data);
  }
  const places = await placeLines(result, logs);
  state.marker.show(result, found, logs, places, marks);
  state.answer = { result, verdict: found, extra, logs, places, shown: found ? found.id : null };
  render(state.answer.shown);
}

/** The engine for `data`, kept while the data is the same (a thread waits with its
    fingerprints compiled); another data (a team's entries changed) gets a new one. */
function engineFor(data) {
  if (!state.engine || state.engine.data !== data) {
    if (state.engine) state.engine.dispose();
    state.engine = new Engine(path.join(ENGINE, 'diagnose-worker.js'), data);
  }
  return state.engine;
}

function mb(n) { return `${(n / 1e6).toFixed(n < 1e7 ? 2 : 0)} MB`; }

/** For each log, the editor line of every line the result names (see lib/lines.js). */
async function placeLines(result, logs) {
  const places = new Map();
  for (const log of logs) {
    const wanted = result.matches.flatMap((m) => m.evidence).filter((e) => e.file === log.name).map((e) => e.line);
    if (result.initiating && result.initiating.file === log.name) wanted.push(result.initiating.line);
    const map = log.disk ? await editorLines(readLog(log.disk), wanted) : new Map(wanted.map((n) => [n, n]));
    places.set(log.name, (line) => (map.get(line) || line) + (log.offset || 0));
  }
  return places;
}

function nameOf(uri) {
  return uri.scheme === 'file' ? vscode.workspace.asRelativePath(uri, false) : uri.toString(true);
}

async function diagnoseFiles(uri, uris) {
  const chosen = uris && uris.length ? uris : uri instanceof vscode.Uri ? [uri]
    : vscode.window.activeTextEditor ? [vscode.window.activeTextEditor.document.uri] : [];
  if (!chosen.length) throw new Error('open a log, or choose log files in the Explorer, first');
  const logs = [];
  for (const u of chosen) {
    const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === u.toString());
    if (u.scheme === 'file' && !(open && open.isDirty)) {
      logs.push({ name: nameOf(u), uri: u, disk: u.fsPath });
    } else {
      const text = open ? open.getText() : new TextDecoder().decode(await vscode.workspace.fs.readFile(u));
      logs.push({ name: nameOf(u), uri: u, text: engineText(text) });
    }
  }
  await run(logs);
}

async function diagnoseSelection() {
  const editor = vscode.window.activeTextEditor;
  if (!editor) throw new Error('select the lines of a log in an editor first');
  const selection = editor.selection;
  if (selection.isEmpty) return diagnoseFiles(editor.document.uri);
  const start = selection.start.line;
  const whole = new vscode.Range(start, 0, selection.end.line, editor.document.lineAt(selection.end.line).text.length);
  const text = engineText(editor.document.getText(whole));
  return run([{ name: nameOf(editor.document.uri), uri: editor.document.uri, text, offset: start }]);
}

async function diagnoseTerminal() {
  const terminal = vscode.window.activeTerminal;
  if (!terminal) throw new Error('no terminal is open');
  const output = state.recorder.output(terminal);
  const problem = unusable(output, terminal.name, Boolean(terminal.shellIntegration));
  if (problem) throw new Error(problem);
  if (output.running) vscode.window.showInformationMessage(`Nanopedia: "${output.command}" is still running; diagnosing its output so far.`);
  // A read-only document of the output, named after the command, so its lines can be marked.
  state.outputs += 1;
  const name = (output.command || terminal.name).replace(/[^\w .,+=@-]+/g, ' ').trim().slice(0, 80) || 'output';
  const uri = vscode.Uri.from({ scheme: OUTPUT_SCHEME, path: `/${state.outputs}/${name}.log` });
  const text = engineText(output.text);
  state.outputText.set(uri.toString(), text);
  if (state.outputText.size > KEPT_OUTPUTS) state.outputText.delete(state.outputText.keys().next().value);
  await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri), { preview: false });
  await run([{ name: `terminal ${terminal.name}`, uri, text }]);
}

/* ---- The answer view. ---- */

/** {id, article?, source?} of an entry: the site's page, else the team's YAML file. */
function entryOf(id, extra) {
  if (extra && extra.ids.has(id)) {
    const source = ['yaml', 'yml'].map((ext) => path.join(extra.folder, `${id}.${ext}`)).find((p) => fs.existsSync(p));
    return { id, source: source || null };
  }
  const file = path.join(ENGINE, 'site', 'entries', `${id}.html`);
  if (!/^[a-z0-9][a-z0-9-]*$/.test(id) || !fs.existsSync(file)) return { id };
  const page = fs.readFileSync(file, 'utf8');
  const moved = movedTo(page);
  return moved && moved !== id ? entryOf(moved, extra) : { id, article: article(page), page };
}

function render(id) {
  const answer = state.answer;
  if (!answer) return;
  answer.shown = id;
  if (!state.panel) {
    const roots = [vscode.Uri.file(path.join(__dirname, 'media')), vscode.Uri.file(path.join(ENGINE, 'site', 'static'))];
    state.panel = vscode.window.createWebviewPanel('nanopedia.answer', 'Nanopedia', { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      { enableScripts: true, localResourceRoots: roots, retainContextWhenHidden: true, enableFindWidget: true });
    state.panel.onDidDispose(() => { state.panel = null; });
    state.panel.webview.onDidReceiveMessage((msg) => follow(msg).catch((err) => vscode.window.showErrorMessage(`Nanopedia: ${err.message}`)));
  }
  const webview = state.panel.webview;
  const asset = (...parts) => webview.asWebviewUri(vscode.Uri.file(path.join(...parts))).toString();
  const entry = id ? entryOf(id, answer.extra) : null;
  const top = answer.verdict ? entryOf(answer.verdict.id, answer.extra) : null;
  const verify = top && top.page ? verifyCommand(top.page) : null;
  state.panel.title = `Nanopedia: ${answer.verdict ? answer.verdict.id : 'no match'}`;
  webview.html = answerHtml({ result: answer.result, verdict: answer.verdict, verify, entry }, {
    cspSource: webview.cspSource,
    nonce: crypto.randomBytes(18).toString('base64'),
    styles: [asset(ENGINE, 'site', 'static', 'site.css'), asset(ENGINE, 'site', 'static', 'pygments.css'), asset(__dirname, 'media', 'view.css')],
    script: asset(__dirname, 'media', 'view.js'),
    siteUrl: siteUrl()
  });
  state.panel.reveal(state.panel.viewColumn, true);
}

function siteUrl() {
  const raw = (settings().get('siteUrl') || '').trim();
  return raw ? (raw.endsWith('/') ? raw : `${raw}/`) : '';
}

async function follow(msg) {
  if (msg.type === 'reveal') return state.marker.reveal(msg.file, msg.line);
  if (msg.type === 'entry') return render(msg.id);
  if (msg.type === 'source') return vscode.window.showTextDocument(vscode.Uri.file(msg.path));
  const where = msg.type === 'site' ? { site: msg.path } : target(msg.href || '');
  if (where.entry) return render(where.entry);
  if (where.external) return vscode.env.openExternal(vscode.Uri.parse(where.external));
  if (!where.site) return undefined;
  const base = siteUrl();
  if (!base) {
    return vscode.window.showInformationMessage('Nanopedia: set "nanopedia.siteUrl" to open the site in a browser.');
  }
  return vscode.env.openExternal(vscode.Uri.parse(new URL(where.site, base).toString()));
}

module.exports = { activate, deactivate };
