// trainlint for VS Code: runs `trainlint server` (the language server) with the Python interpreter the
// Python extension selected (or `trainlint.interpreter`), and the probe on demand.
import * as cp from "child_process";
import * as path from "path";
import * as vscode from "vscode";
import { LanguageClient, LanguageClientOptions, ServerOptions } from "vscode-languageclient/node";

const FIX_ALL = "source.fixAll.trainlint";
const NOTEBOOK_FIX_ALL = "notebook.source.fixAll.trainlint";
const CELL_SCHEME = "vscode-notebook-cell";
/** trainlint is not published on a package index yet: it installs from its repository. */
const PACKAGE = "trainlint-dl[server] @ git+https://github.com/trainlint/trainlint";

let client: LanguageClient | undefined;
let output: vscode.LogOutputChannel;
let probeDiagnostics: vscode.DiagnosticCollection;
let starting: Promise<void> = Promise.resolve();
let storage: vscode.Uri;

/** The part of the Python extension's API this uses (ms-python.python, `environments`). */
interface PythonApi {
  environments: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { id: string; path: string };
    resolveEnvironment(env: { id: string; path: string }): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
  };
}

interface Interpreter {
  python: string;
  /** where it came from, for messages */
  from: string;
}

function config(resource?: vscode.Uri): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration("trainlint", resource);
}

function workspaceResource(): vscode.Uri | undefined {
  return vscode.window.activeTextEditor?.document.uri ?? vscode.workspace.workspaceFolders?.[0]?.uri;
}

async function pythonApi(): Promise<PythonApi | undefined> {
  const ext = vscode.extensions.getExtension<PythonApi>("ms-python.python");
  if (!ext) {
    return undefined;
  }
  try {
    const api = ext.isActive ? ext.exports : await ext.activate();
    return api?.environments ? api : undefined;
  } catch (err) {
    output.appendLine(`The Python extension did not activate: ${err}`);
    return undefined;
  }
}

function expand(value: string): string {
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? "";
  const home = process.env.HOME ?? process.env.USERPROFILE ?? "";
  return value.replace(/\$\{workspaceFolder\}/g, folder).replace(/^~(?=$|[\\/])/, home);
}

async function interpreter(resource?: vscode.Uri): Promise<Interpreter> {
  const configured = config(resource).get<string>("interpreter", "").trim();
  if (configured) {
    return { python: expand(configured), from: "the setting trainlint.interpreter" };
  }
  const api = await pythonApi();
  if (api) {
    const env = await api.environments.resolveEnvironment(api.environments.getActiveEnvironmentPath(resource));
    const exe = env?.executable.uri?.fsPath;
    if (exe) {
      return { python: exe, from: "the interpreter selected in the Python extension" };
    }
  }
  return { python: process.platform === "win32" ? "python" : "python3", from: "the PATH" };
}

function run(command: string, args: string[], cwd?: string): Promise<{ code: number | null; stdout: string; stderr: string; error?: Error }> {
  return new Promise((resolve) => {
    cp.execFile(command, args, { cwd, maxBuffer: 64 * 1024 * 1024, env: process.env }, (error, stdout, stderr) => {
      const code = error ? (typeof (error as cp.ExecFileException).code === "number" ? (error as cp.ExecFileException).code as number : null) : 0;
      resolve({ code, stdout, stderr, error: error && code === null ? error : undefined });
    });
  });
}

/** What the interpreter lacks of trainlint's server (a list of module names), or a reason it cannot run.
 * Checked in the directory the server runs in (`python -m` imports from there first, as `-c` does). */
async function missingModules(python: string, cwd: string | undefined): Promise<string[] | string> {
  const check = "import importlib.util as u; print(','.join(m for m in ('trainlint', 'pygls', 'lsprotocol') if u.find_spec(m) is None))";
  const result = await run(python, ["-c", check], cwd);
  if (result.error || result.code !== 0) {
    return `${python} could not be run (${result.error?.message ?? result.stderr.trim()})`;
  }
  return result.stdout.trim() ? result.stdout.trim().split(",") : [];
}

function installCommand(python: string): string {
  const quoted = /[\s"']/.test(python) ? `"${python}"` : python;
  return `${quoted} -m pip install "${PACKAGE}"`;
}

async function notInstalled(interp: Interpreter, what: string[] | string): Promise<void> {
  const command = installCommand(interp.python);
  const reason = typeof what === "string"
    ? what
    : what.includes("trainlint")
      ? `trainlint is not installed in ${interp.python}`
      : `trainlint's language server needs ${what.join(" and ")}, not installed in ${interp.python}`;
  const message = `${reason} (${interp.from}). Install it with: ${command}`;
  output.appendLine(message);
  const choice = await vscode.window.showErrorMessage(message, "Install in a terminal", "Copy the command");
  if (choice === "Install in a terminal") {
    const terminal = vscode.window.createTerminal("trainlint: install");
    terminal.show();
    terminal.sendText(command);
  } else if (choice === "Copy the command") {
    await vscode.env.clipboard.writeText(command);
  }
}

/** The editor's settings as a [tool.trainlint] table; only what differs from the defaults. */
function editorSettings(resource?: vscode.Uri): Record<string, unknown> | undefined {
  const cfg = config(resource);
  const table: Record<string, unknown> = {};
  const select = cfg.get<string[]>("select", []);
  const ignore = cfg.get<string[]>("ignore", []);
  const failOn = cfg.get<string>("failOn", "warning");
  if (select.length) {
    table["select"] = select;
  }
  if (ignore.length) {
    table["ignore"] = ignore;
  }
  if (failOn !== "warning") {
    table["fail-on"] = failOn;
  }
  return Object.keys(table).length ? table : undefined;
}

async function start(): Promise<void> {
  const resource = workspaceResource();
  const interp = await interpreter(resource);
  const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const missing = await missingModules(interp.python, cwd);
  if (typeof missing === "string" || missing.length) {
    void notInstalled(interp, missing);
    return;
  }
  output.appendLine(`Starting trainlint server with ${interp.python} (${interp.from})`);
  const serverOptions: ServerOptions = {
    command: interp.python,
    args: ["-m", "trainlint", "server"],
    options: { cwd },
  };
  const settings = editorSettings(resource);
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", language: "python" },
      { scheme: "untitled", language: "python" },
      { scheme: CELL_SCHEME, language: "python" },
    ],
    outputChannel: output,
    initializationOptions: { debounce: 150, ...(settings ? { settings } : {}) },
  };
  client = new LanguageClient("trainlint", "trainlint", serverOptions, clientOptions);
  await client.start();
}

async function stop(): Promise<void> {
  const running = client;
  client = undefined;
  if (running) {
    try {
      await running.stop();
    } catch (err) {
      output.appendLine(`Stopping the server: ${err}`);
    }
  }
}

function restart(): Promise<void> {
  starting = starting.then(stop).then(start).catch((err) => {
    output.appendLine(`trainlint server failed to start: ${err}`);
    void vscode.window.showErrorMessage(`trainlint server failed to start: ${err}`);
  });
  return starting;
}

// -------------------------------------------------------------------------------------------------
// commands

async function fixAll(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    return;
  }
  const doc = editor.document;
  const kind = doc.uri.scheme === CELL_SCHEME ? NOTEBOOK_FIX_ALL : FIX_ALL;
  const whole = new vscode.Range(0, 0, doc.lineCount, 0);
  const actions = await vscode.commands.executeCommand<vscode.CodeAction[]>("vscode.executeCodeActionProvider", doc.uri, whole, kind);
  const action = actions?.find((a) => a.kind?.value === kind && a.edit);
  if (action?.edit) {
    await vscode.workspace.applyEdit(action.edit);
  }
}

async function showRule(code?: string): Promise<void> {
  if (!code) {
    const editor = vscode.window.activeTextEditor;
    const here = editor
      ? vscode.languages.getDiagnostics(editor.document.uri).filter((d) =>
        (d.source === "trainlint" || d.source === "trainlint probe") && d.range.contains(editor.selection.active))
      : [];
    const codes = [...new Set(here.map((d) => (typeof d.code === "object" ? String(d.code.value) : String(d.code))))];
    code = codes.length === 1
      ? codes[0]
      : codes.length > 1
        ? await vscode.window.showQuickPick(codes, { placeHolder: "Which rule?" })
        : await vscode.window.showInputBox({ prompt: "Rule code", placeHolder: "TL301", validateInput: (v) => (/^TL\d{3}$/i.test(v.trim()) ? undefined : "a code such as TL301") });
  }
  if (!code) {
    return;
  }
  const interp = await interpreter(workspaceResource());
  const result = await run(interp.python, ["-m", "trainlint", "rule", code.trim().toUpperCase()]);
  if (result.code !== 0) {
    void vscode.window.showErrorMessage(`trainlint rule ${code}: ${result.stderr.trim() || result.error?.message}`);
    return;
  }
  // `trainlint rule` prints the name, a line of facts and the link, then the document (markdown)
  const [, facts, url, ...doc] = result.stdout.split(/\r?\n/);
  const markdown = `${doc.join("\n").trim()}\n\n---\n\n${facts}  \n[${url}](${url})\n`;
  // a file of the extension's own (an untitled document would ask to be saved when closed)
  const dir = vscode.Uri.joinPath(storage, "rules");
  await vscode.workspace.fs.createDirectory(dir);
  const file = vscode.Uri.joinPath(dir, `${code.trim().toUpperCase()}.md`);
  await vscode.workspace.fs.writeFile(file, Buffer.from(markdown, "utf8"));
  await vscode.commands.executeCommand("markdown.showPreview", file);
}

const VERDICT_SEVERITY: Record<string, vscode.DiagnosticSeverity> = {
  "confirmed": vscode.DiagnosticSeverity.Error,
  "not reproduced": vscode.DiagnosticSeverity.Information,
  "not reached": vscode.DiagnosticSeverity.Warning,
  "not checked": vscode.DiagnosticSeverity.Information,
};

interface JsonFinding {
  code: string;
  message: string;
  severity: string;
  location: { row: number; column: number };
  end_location: { row: number; column: number };
  url: string;
  hint?: string;
  cell?: number;
  probe?: { status: string; evidence: string };
}

/** The probe's findings as diagnostics: the verdict first (confirmed / not reproduced / not reached). */
function probeDiagnosticsOf(findings: JsonFinding[]): vscode.Diagnostic[] {
  return findings.map((f) => {
    const start = new vscode.Position(Math.max(f.location.row - 1, 0), Math.max(f.location.column - 1, 0));
    let end = new vscode.Position(Math.max(f.end_location.row - 1, 0), Math.max(f.end_location.column - 1, 0));
    if (!end.isAfter(start)) {
      end = start.translate(0, 1);
    }
    const verdict = f.probe?.status;
    const evidence = f.probe?.evidence ? ` — ${f.probe.evidence}` : "";
    const d = new vscode.Diagnostic(new vscode.Range(start, end),
      verdict ? `[${verdict}] ${f.message}${evidence}` : f.message,
      verdict ? VERDICT_SEVERITY[verdict] ?? vscode.DiagnosticSeverity.Information : vscode.DiagnosticSeverity.Warning);
    d.source = "trainlint probe";
    d.code = { value: f.code, target: vscode.Uri.parse(f.url) };
    return d;
  });
}

async function probeFile(uri?: vscode.Uri): Promise<void> {
  const doc = uri ? await vscode.workspace.openTextDocument(uri) : vscode.window.activeTextEditor?.document;
  if (!doc || doc.uri.scheme !== "file" || doc.languageId !== "python") {
    void vscode.window.showWarningMessage("trainlint: open a Python script (saved as a file) to probe it.");
    return;
  }
  if (doc.isDirty) {
    await doc.save();
  }
  const interp = await interpreter(doc.uri);
  const file = doc.uri.fsPath;
  const cwd = vscode.workspace.getWorkspaceFolder(doc.uri)?.uri.fsPath ?? path.dirname(file);
  const missing = await missingModules(interp.python, cwd);
  if (typeof missing === "string" || missing.includes("trainlint")) {
    void notInstalled(interp, typeof missing === "string" ? missing : ["trainlint"]);
    return;
  }
  const extra = config(doc.uri).get<string[]>("args", []);
  const args = ["-m", "trainlint", "--probe", "--output-format", "json", "--exit-zero", "--no-cache", ...extra, file];
  output.appendLine(`Probing: ${interp.python} ${args.join(" ")}`);
  probeDiagnostics.delete(doc.uri);
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: `trainlint: probing ${path.basename(file)}…` },
    () => run(interp.python, args, cwd));
  if (result.stderr) {
    output.append(result.stderr);
  }
  let findings: JsonFinding[];
  try {
    findings = JSON.parse(result.stdout) as JsonFinding[];
  } catch {
    output.show(true);
    void vscode.window.showErrorMessage(`trainlint: the probe of ${path.basename(file)} failed (exit ${result.code}); see the output.`);
    return;
  }
  probeDiagnostics.set(doc.uri, probeDiagnosticsOf(findings.filter((f) => f.cell === undefined)));
  const counts = new Map<string, number>();
  for (const f of findings) {
    const verdict = f.probe?.status ?? "not probed";
    counts.set(verdict, (counts.get(verdict) ?? 0) + 1);
  }
  const summary = [...counts].map(([verdict, n]) => `${n} ${verdict}`).join(", ") || "no findings";
  output.appendLine(`Probe of ${path.basename(file)}: ${summary}`);
  vscode.window.setStatusBarMessage(`trainlint probe: ${summary}`, 15000);
  void vscode.window.showInformationMessage(`trainlint probe of ${path.basename(file)}: ${summary}.`);
}

// -------------------------------------------------------------------------------------------------

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("trainlint", { log: true });
  storage = context.globalStorageUri;
  probeDiagnostics = vscode.languages.createDiagnosticCollection("trainlint-probe");
  context.subscriptions.push(
    output,
    probeDiagnostics,
    vscode.commands.registerCommand("trainlint.fixAll", fixAll),
    vscode.commands.registerCommand("trainlint.showRule", showRule),
    vscode.commands.registerCommand("trainlint.probeFile", probeFile),
    vscode.commands.registerCommand("trainlint.restart", restart),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("trainlint")) {
        void restart();
      }
    }),
    // a probe's verdicts are about the text it ran: an edit makes them stale
    vscode.workspace.onDidChangeTextDocument((e) => {
      if (e.contentChanges.length && probeDiagnostics.has(e.document.uri)) {
        probeDiagnostics.delete(e.document.uri);
      }
    }),
    { dispose: () => void stop() },
  );
  const api = await pythonApi();
  if (api) {
    context.subscriptions.push(api.environments.onDidChangeActiveEnvironmentPath(() => {
      if (!config(workspaceResource()).get<string>("interpreter", "").trim()) {
        void restart();
      }
    }));
  }
  await restart();
}

export async function deactivate(): Promise<void> {
  await stop();
}
