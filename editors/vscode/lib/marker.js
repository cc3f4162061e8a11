// The marks a diagnosis leaves in the log: a diagnostic per matched line (the first failure an
// error, other decisive lines warnings, collateral and weaker lines information and hints, so the
// first failure stands out in the scroll bar of a 50,000-line file), decorations that say what
// each line is at its end, a code lens and a status-bar item on the first failing line.
'use strict';

const SEVERITY = { first: 'Error', decisive: 'Warning', supporting: 'Information',
                   collateral: 'Information', context: 'Hint', benign: 'Hint' };

class Marker {
  constructor(vscode, context) {
    this.vscode = vscode;
    this.diagnostics = vscode.languages.createDiagnosticCollection('nanopedia');
    this.status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 100);
    this.status.command = 'nanopedia.revealFirstFailure';
    this.lensChanged = new vscode.EventEmitter();
    const ruler = vscode.OverviewRulerLane.Full;
    const theme = (id) => new vscode.ThemeColor(id);
    this.styles = {
      first: vscode.window.createTextEditorDecorationType({
        isWholeLine: true, backgroundColor: theme('diffEditor.removedLineBackground'),
        overviewRulerColor: theme('editorOverviewRuler.errorForeground'), overviewRulerLane: ruler,
        after: { margin: '0 0 0 2em', color: theme('editorError.foreground'), fontWeight: 'bold' }
      }),
      decisive: vscode.window.createTextEditorDecorationType({
        isWholeLine: true, overviewRulerColor: theme('editorOverviewRuler.warningForeground'), overviewRulerLane: ruler,
        after: { margin: '0 0 0 2em', color: theme('editorWarning.foreground') }
      }),
      collateral: vscode.window.createTextEditorDecorationType({
        isWholeLine: true, opacity: '0.75', overviewRulerColor: theme('editorOverviewRuler.infoForeground'), overviewRulerLane: ruler,
        after: { margin: '0 0 0 2em', color: theme('editorCodeLens.foreground'), fontStyle: 'italic' }
      }),
      other: vscode.window.createTextEditorDecorationType({
        after: { margin: '0 0 0 2em', color: theme('editorCodeLens.foreground') }
      })
    };
    /** uri string -> [{line (0-based), kind, message, rank}] */
    this.byUri = new Map();
    this.first = null;
    this.onDidChangeCodeLenses = this.lensChanged.event;
    context.subscriptions.push(this.diagnostics, this.status, this.lensChanged, ...Object.values(this.styles),
      vscode.window.onDidChangeVisibleTextEditors(() => this.decorate()),
      vscode.languages.registerCodeLensProvider({ scheme: '*' }, this));
  }

  /** Marks the logs of a result; `places` maps each log's engine lines to editor lines. */
  show(result, verdict, logs, places, marksOf) {
    this.clear();
    const vs = this.vscode;
    const byName = new Map(logs.map((log) => [log.name, log]));
    for (const log of logs) {
      const place = places.get(log.name);
      const found = marksOf(result, log.name)
        .map((m) => ({ ...m, file: log.name, engineLine: m.line, line: place(m.line) - 1 }));
      this.byUri.set(log.uri.toString(), found);
      this.diagnostics.set(log.uri, found.map((m) => {
        const d = new vs.Diagnostic(new vs.Range(m.line, 0, m.line, Number.MAX_SAFE_INTEGER), m.message,
          vs.DiagnosticSeverity[SEVERITY[m.kind]]);
        d.source = 'nanopedia';
        d.code = m.entries[0];
        if (m.kind === 'collateral') d.tags = [vs.DiagnosticTag.Unnecessary];
        return d;
      }));
    }
    const first = result.initiating && byName.get(result.initiating.file);
    if (verdict && first) {
      this.first = { uri: first.uri, line: places.get(first.name)(result.initiating.line) - 1, verdict };
      const rank = verdict.rank === null ? 'rank unknown' : `rank ${verdict.rank}`;
      this.status.text = `$(error) Nanopedia: ${rank} · ${verdict.id}`;
      this.status.tooltip = `First failure${verdict.host ? ` on ${verdict.host}` : ''} at ` +
        `${result.initiating.file}:${result.initiating.line}: ` +
        `${verdict.title} (${verdict.confidence}). Click to go to the line.`;
      this.status.show();
    }
    vs.commands.executeCommand('setContext', 'nanopedia.diagnosed', true);
    this.decorate();
    this.lensChanged.fire();
  }

  clear() {
    this.diagnostics.clear();
    this.byUri.clear();
    this.first = null;
    this.status.hide();
    this.vscode.commands.executeCommand('setContext', 'nanopedia.diagnosed', false);
    this.decorate();
    this.lensChanged.fire();
  }

  decorate() {
    const vs = this.vscode;
    for (const editor of vs.window.visibleTextEditors) {
      const found = this.byUri.get(editor.document.uri.toString()) || [];
      const groups = { first: [], decisive: [], collateral: [], other: [] };
      for (const m of found) {
        if (m.line >= editor.document.lineCount) continue;
        const group = groups[m.kind] ? m.kind : 'other';
        const rank = m.rank === null ? 'rank ?' : `rank ${m.rank}`;
        const text = m.kind === 'first' ? `◀ first failure (${rank}): ${m.entries[0]}` : `◀ ${m.kind} (${rank}): ${m.entries.join(', ')}`;
        groups[group].push({ range: new vs.Range(m.line, 0, m.line, 0), hoverMessage: m.message,
                             renderOptions: { after: { contentText: text } } });
      }
      for (const [kind, ranges] of Object.entries(groups)) editor.setDecorations(this.styles[kind], ranges);
    }
  }

  provideCodeLenses(document) {
    const first = this.first;
    if (!first || first.uri.toString() !== document.uri.toString()) return [];
    const v = first.verdict;
    const range = new this.vscode.Range(first.line, 0, first.line, 0);
    const rank = v.rank === null ? 'rank unknown' : `rank ${v.rank}`;
    return [new this.vscode.CodeLens(range, {
      title: `Nanopedia: first failure (${rank}): ${v.id} (${v.confidence}) · show the answer`,
      command: 'nanopedia.showAnswer'
    })];
  }

  async revealFirst() {
    if (this.first) await this.revealAt(this.first.uri, this.first.line);
  }

  /** Shows line `line` (the engine's, 1-based) of the log the result calls `file`. */
  async reveal(file, line) {
    for (const [uri, found] of this.byUri) {
      const mark = found.find((m) => m.file === file && m.engineLine === line);
      if (mark) return this.revealAt(this.vscode.Uri.parse(uri), mark.line);
    }
    return undefined;
  }

  async revealAt(uri, line) {
    const vs = this.vscode;
    const editor = await vs.window.showTextDocument(uri, { viewColumn: vs.ViewColumn.One, preview: false });
    const range = new vs.Range(line, 0, line, 0);
    editor.selection = new vs.Selection(range.start, range.start);
    editor.revealRange(range, vs.TextEditorRevealType.InCenterIfOutsideViewport);
  }
}

module.exports = { Marker };
