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

/**
 * Why the terminal's last output cannot be diagnosed, or null when it can: `output` is the
 * recorder's (or null), `integrated` whether the terminal has shell integration. A command that
 * ended with no output recorded is named rather than diagnosed as an empty log: VS Code's
 * workbench starts passing a command's output to extensions when it has parsed the command's
 * start mark, and output that reached it in the same piece as that mark (a command that prints
 * everything at once, on a busy machine) never reaches an extension.
 */
function unusable(output, name, integrated) {
  const instead = 'Copy the output into an editor and run "Nanopedia: Diagnose the selection" instead.';
  if (!output) {
    const why = integrated ? 'no command has run in it since the extension started'
      : 'its shell has no shell integration (VS Code gives extensions the output of commands only through it)';
    return `nothing to diagnose in terminal "${name}": ${why}. ${instead}`;
  }
  if (!output.running && !output.text.trim()) {
    return `"${output.command}" ended, but VS Code passed none of its output to extensions (it can miss ` +
      `the output of a command that prints everything at once). Run it again, or: ${instead}`;
  }
  return null;
}

module.exports = { Recorder, plainOutput, unusable };
