// The output of terminal commands, kept for "Diagnose the last output of the terminal".
//
// VS Code gives an extension a terminal's output only through shell integration: each command's
// execution has `read()`, a stream of what the command writes *from the moment read() is first
// called*. So the recorder reads every execution as it starts (onDidStartTerminalShellExecution)
// and keeps, per terminal, the output of its last command, up to `limit` characters (the tail).
// What VS Code does not give: output written before the extension started, output of a terminal
// without shell integration (a shell VS Code cannot inject into, a remote shell opened by `ssh`
// inside it, tmux), and the terminal's scrollback or selection.
'use strict';

/* Operating System Commands (ESC ] ... BEL or ESC \): titles, the current folder, and the
   shell-integration marks (OSC 633) themselves, none of which a log contains. The diagnosis
   itself removes the CSI sequences (colours) and carriage returns as the CLI does. */
// eslint-disable-next-line no-control-regex
const OSC = /\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/g;

/** The text a terminal command printed, without the terminal's own control sequences. */
function plainOutput(raw) {
  return raw.replace(OSC, '');
}

class Recorder {
  constructor(limit) {
    this.limit = limit;
    /** terminal -> {command, text, exitCode, running} of its last command. */
    this.last = new Map();
  }

  /** Reads a command's output as it runs; its record replaces the terminal's last one. */
  async start(terminal, execution) {
    const record = { command: execution.commandLine ? execution.commandLine.value : '',
                     parts: [], size: 0, exitCode: undefined, running: true, execution };
    this.last.set(terminal, record);
    for await (const data of execution.read()) {
      record.parts.push(data);
      record.size += data.length;
      if (record.size > 2 * this.limit) this.trim(record);
    }
  }

  trim(record) {
    const text = record.parts.join('');
    record.parts = [text.slice(text.length - this.limit)];
    record.size = record.parts[0].length;
    record.cut = true;
  }

  end(terminal, execution, exitCode) {
    const record = this.last.get(terminal);
    if (record && record.execution === execution) {
      record.running = false;
      record.exitCode = exitCode;
    }
  }

  forget(terminal) {
    this.last.delete(terminal);
  }

  /** {command, text, exitCode, running, cut} of the terminal's last command, or null. */
  output(terminal) {
    const record = this.last.get(terminal);
    if (!record) return null;
    if (record.size > this.limit) this.trim(record);
    return { command: record.command, text: plainOutput(record.parts.join('')),
             exitCode: record.exitCode, running: record.running, cut: Boolean(record.cut) };
  }
}

module.exports = { Recorder, plainOutput };
