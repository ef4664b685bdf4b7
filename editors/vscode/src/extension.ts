// The vscode API glue, kept thin: every decision about what to run, parse, show or send lives in
// the plain modules beside it, which Node's test runner covers. This file is not exercised by the
// tests (VS Code itself cannot run there): it wires those modules to commands, a status bar item,
// a file watcher, a webview panel and modal dialogs.
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";

import { Decision, confirmationOf } from "./bridge";
import { readProjectStatus } from "./consortCli";
import { Target } from "./dashboardClient";
import { dashboardDocument } from "./dashboardPage";
import { RunningDashboard, startDashboard } from "./dashboardProcess";
import { PageSession } from "./session";
import { statusBarProblem, statusBarView } from "./status";
import { parseAttachUrl } from "./attach";

let output: vscode.OutputChannel;
let started: RunningDashboard | null = null;
let panel: vscode.WebviewPanel | null = null;

function settings(): { command: string; refreshSeconds: number } {
  const config = vscode.workspace.getConfiguration("consort");
  return {
    command: config.get<string>("command", "consort"),
    refreshSeconds: Math.max(5, config.get<number>("statusRefreshSeconds", 30)),
  };
}

function projectFolder(): string | null {
  const folders = vscode.workspace.workspaceFolders ?? [];
  const withConfig = folders.find((f) => fs.existsSync(path.join(f.uri.fsPath, "consort.toml")));
  return (withConfig ?? folders[0])?.uri.fsPath ?? null;
}

async function confirm(decision: Decision): Promise<boolean> {
  const { question, button } = confirmationOf(decision);
  const answer = await vscode.window.showWarningMessage(question, { modal: true }, button);
  return answer === button;
}

/** A panel on `target`; `owned` is the dashboard this panel started, stopped when it closes. */
async function showPanel(context: vscode.ExtensionContext, target: Target, owned: RunningDashboard | null): Promise<void> {
  const bridgeJs = fs.readFileSync(path.join(context.extensionPath, "media", "pageBridge.js"), "utf8");
  const html = await dashboardDocument(target, bridgeJs);
  const view = vscode.window.createWebviewPanel("consort.dashboard", "Consort", vscode.ViewColumn.Active, {
    enableScripts: true,
    localResourceRoots: [],
    retainContextWhenHidden: true,
  });
  const session = new PageSession(target, {
    post: (message) => void view.webview.postMessage(message),
    confirm,
    log: (line) => output.appendLine(line),
  });
  view.webview.onDidReceiveMessage((message) => void session.receive(message));
  view.onDidDispose(() => {
    session.dispose();
    if (panel === view) panel = null;
    if (owned !== null) {
      void owned.stop();
      if (started === owned) started = null;
    }
  });
  view.webview.html = html;
  panel = view;
}

async function openDashboard(context: vscode.ExtensionContext): Promise<void> {
  const folder = projectFolder();
  if (folder === null) {
    void vscode.window.showErrorMessage("Consort: open the folder of a Consort project first.");
    return;
  }
  if (panel !== null && started !== null && started.child.exitCode === null) {
    panel.reveal();
    return;
  }
  panel?.dispose(); // an attached one, or one whose dashboard has ended
  try {
    if (started === null || started.child.exitCode !== null) {
      started = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: "Starting consort dashboard…" },
        () => startDashboard(settings().command, folder),
      );
      output.appendLine(`consort dashboard at ${started.url}${started.token === null ? ` (read-only: ${started.readOnlyReason})` : ""}`);
      void started.exited.then((code) => output.appendLine(`consort dashboard exited ${code}`));
    }
    await showPanel(context, { url: started.url, token: started.token }, started);
  } catch (error) {
    void vscode.window.showErrorMessage(`Consort: ${(error as Error).message}`);
  }
}

async function attachDashboard(context: vscode.ExtensionContext): Promise<void> {
  const raw = await vscode.window.showInputBox({
    prompt: "The URL `consort dashboard` printed (127.0.0.1 or localhost only)",
    placeHolder: "http://127.0.0.1:PORT/",
    validateInput: (value) => {
      try {
        parseAttachUrl(value);
        return null;
      } catch (error) {
        return (error as Error).message;
      }
    },
  });
  if (raw === undefined) return;
  const token = await vscode.window.showInputBox({
    prompt: "The token it printed, to approve and reject from the panel (leave empty: read-only)",
    password: true,
    ignoreFocusOut: true,
  });
  panel?.dispose(); // and with it the dashboard that panel started, if any
  try {
    await showPanel(context, { url: parseAttachUrl(raw), token: token ? token.trim() : null }, null);
  } catch (error) {
    void vscode.window.showErrorMessage(`Consort: ${(error as Error).message}`);
  }
}

function statusBar(context: vscode.ExtensionContext): () => Promise<void> {
  const item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
  item.command = "consort.openDashboard";
  context.subscriptions.push(item);
  let running: Promise<void> | null = null;
  const refresh = async (): Promise<void> => {
    const folder = projectFolder();
    if (folder === null) {
      item.hide();
      return;
    }
    running ??= (async () => {
      let view;
      try {
        const { status, next } = await readProjectStatus(settings().command, folder);
        view = statusBarView(status, next);
      } catch (error) {
        view = statusBarProblem((error as Error).message);
      }
      item.text = view.text;
      item.tooltip = view.tooltip;
      item.backgroundColor = view.attention ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
      item.show();
    })().finally(() => {
      running = null;
    });
    return running;
  };
  const folder = projectFolder();
  if (folder !== null) {
    let soon: NodeJS.Timeout | null = null;
    const later = (): void => {
      if (soon !== null) clearTimeout(soon);
      soon = setTimeout(() => void refresh(), 300);
    };
    for (const watched of [".consort/ledger.jsonl", ".git/HEAD"]) {
      const watcher = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(folder, watched));
      watcher.onDidChange(later);
      watcher.onDidCreate(later);
      context.subscriptions.push(watcher);
    }
  }
  const timer = setInterval(() => void refresh(), settings().refreshSeconds * 1000);
  context.subscriptions.push({ dispose: () => clearInterval(timer) });
  void refresh();
  return refresh;
}

export function activate(context: vscode.ExtensionContext): void {
  output = vscode.window.createOutputChannel("Consort");
  context.subscriptions.push(output);
  const refresh = statusBar(context);
  context.subscriptions.push(
    vscode.commands.registerCommand("consort.openDashboard", () => openDashboard(context)),
    vscode.commands.registerCommand("consort.attachDashboard", () => attachDashboard(context)),
    vscode.commands.registerCommand("consort.refreshStatus", () => refresh()),
  );
}

export async function deactivate(): Promise<void> {
  panel?.dispose();
  if (started !== null) await started.stop();
  started = null;
}
