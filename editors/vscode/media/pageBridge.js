// Runs in the webview before the dashboard's own page script. The webview may connect nowhere
// (its content security policy says connect-src 'none'), so the page's fetch and EventSource are
// carried over messages to the extension, which checks each one, sends it to the dashboard on
// 127.0.0.1 and answers. The token, when the editor holds one, never enters this page: the
// extension adds it to a decision after the person confirms it in the editor.
"use strict";

(function () {
  const vscode = acquireVsCodeApi();
  const settings = JSON.parse(document.getElementById("consort-editor").textContent);
  let nextId = 1;
  const waiting = new Map(); // id -> {resolve, reject}
  const streams = new Map(); // id -> EditorEventSource

  Object.defineProperty(window, "consortEditor", {
    value: Object.freeze({ holdsToken: settings.holdsToken === true }),
    writable: false,
  });

  window.addEventListener("message", (message) => {
    const data = message.data;
    if (!data || typeof data.id !== "number") return;
    if (data.type === "response") {
      const pending = waiting.get(data.id);
      if (!pending) return;
      waiting.delete(data.id);
      pending.resolve(new Response(data.body, {
        status: data.status,
        statusText: data.statusText,
        headers: { "content-type": data.contentType },
      }));
      return;
    }
    const stream = streams.get(data.id);
    if (!stream) return;
    if (data.type === "event-open") stream._emit("open", new Event("open"));
    else if (data.type === "event-error") stream._emit("error", new Event("error"));
    else if (data.type === "event") {
      stream._emit(data.event, new MessageEvent(data.event, { data: data.data, lastEventId: data.lastEventId || "" }));
    }
  });

  function plainHeaders(headers) {
    const out = {};
    new Headers(headers || {}).forEach((value, key) => { out[key] = value; });
    return out;
  }

  window.fetch = function (path, init) {
    const id = nextId++;
    const options = init || {};
    return new Promise((resolve, reject) => {
      waiting.set(id, { resolve, reject });
      vscode.postMessage({
        type: "fetch",
        id,
        path: String(path),
        init: {
          method: options.method || "GET",
          headers: plainHeaders(options.headers),
          body: typeof options.body === "string" ? options.body : undefined,
        },
      });
    });
  };

  class EditorEventSource extends EventTarget {
    constructor(path) {
      super();
      this.id = nextId++;
      this.readyState = 0;
      streams.set(this.id, this);
      vscode.postMessage({ type: "events-open", id: this.id, path: String(path) });
    }

    _emit(type, event) {
      if (type === "open") this.readyState = 1;
      if (type === "error") this.readyState = 0;
      this.dispatchEvent(event);
    }

    close() {
      this.readyState = 2;
      streams.delete(this.id);
      vscode.postMessage({ type: "events-close", id: this.id });
    }
  }

  window.EventSource = EditorEventSource;
})();
