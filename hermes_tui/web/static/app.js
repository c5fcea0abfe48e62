// Hermes dashboard: plain JS, no build step.
// Rule: text from the model, tools, skills or memory is inserted with textContent. The only
// markup ever inserted is an "html" field from the server, which render.py has sanitized.
"use strict";

(function () {
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const $ = (id) => document.getElementById(id);

  const el = (tag, className, text) => {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  };

  const setSanitizedHtml = (node, html) => {
    node.innerHTML = html; // server-sanitized (render.py) — never raw model text
  };

  const when = (epoch) => new Date(epoch * 1000).toLocaleString();

  // A scrolled list follows new content only while its reader is at the bottom.
  const nearBottom = (node) => node.scrollHeight - node.scrollTop - node.clientHeight < 40;
  const toBottom = (node) => {
    node.scrollTop = node.scrollHeight;
  };

  // Markdown rendered by the server, with a copy button on each code block (the button is ours).
  function setRendered(node, html) {
    setSanitizedHtml(node, html);
    for (const pre of node.querySelectorAll("pre")) {
      const box = el("div", "code-block");
      const button = el("button", "copy quiet", "Copy");
      button.type = "button";
      button.title = "copy this code block";
      pre.replaceWith(box);
      box.append(button, pre);
      button.addEventListener("click", () => copyText(pre.textContent, button));
    }
  }

  async function copyText(text, button) {
    let ok = false;
    if (navigator.clipboard && window.isSecureContext) {
      try {
        await navigator.clipboard.writeText(text);
        ok = true;
      } catch (e) {
        ok = false; // denied: try the old way
      }
    }
    if (!ok) ok = legacyCopy(text);
    button.textContent = ok ? "Copied" : "Select and copy by hand";
    setTimeout(() => {
      button.textContent = "Copy";
    }, 2000);
  }

  // Without the clipboard API (plain http from another host): a selected, off-screen textarea.
  function legacyCopy(text) {
    const area = el("textarea", "offscreen");
    area.value = text;
    area.readOnly = true;
    document.body.append(area);
    area.select();
    let ok = false;
    try {
      ok = document.execCommand("copy");
    } catch (e) {
      ok = false;
    }
    area.remove();
    return ok;
  }

  function setStatus(text) {
    $("status").textContent = text || "";
  }

  async function api(method, url, body) {
    const options = { method, headers: { "X-CSRF-Token": csrf }, credentials: "same-origin" };
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
    }
    const response = await fetch(url, options);
    if (response.status === 401) {
      window.location.assign("/login");
      throw new Error("logged out");
    }
    return response;
  }

  async function apiJson(method, url, body) {
    const response = await api(method, url, body);
    const data = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(data.error || response.statusText);
    return data;
  }

  // ---------------------------------------------------------------- sessions

  let currentSession = null;

  async function loadSessions() {
    const data = await apiJson("GET", "/api/sessions");
    currentSession = data.current;
    const list = $("session-list");
    list.replaceChildren();
    for (const s of data.sessions) {
      // A sub-agent's session (delegate) comes right after its parent's: marked and indented.
      const sub = s.parent_id !== null;
      const item = el("li", sub ? "subagent" : "");
      const button = el("button", "session-item" + (s.id === currentSession ? " current" : ""));
      button.type = "button";
      button.dataset.id = s.id;
      const title = s.title || s.first_user_line || "(empty session)";
      const source = sub ? `sub-agent of #${s.parent_id}` : s.source;
      button.append(
        el("span", "title", sub ? `↳ ${title}` : title),
        el("span", "meta", `#${s.id} · ${source} · ${s.message_count} messages · ${when(s.last_activity)}`),
      );
      button.addEventListener("click", () => openTranscript(s.id));
      item.append(button);
      list.append(item);
    }
  }

  function renderToolCall(container, call) {
    const details = el("details", "tool");
    details.dataset.tool = call.name;
    const summary = el("summary");
    summary.append(el("span", "tool-name", call.name));
    // The argument the server picked for a one-line view (the command, the path...), as text.
    if (call.summary) summary.append(el("span", "tool-arg", call.summary));
    summary.append(el("span", "tool-state", "running…"));
    details.append(summary, el("pre", "tool-args", formatArgs(call.arguments)));
    container.append(details);
    return details;
  }

  const APPROVAL_BUTTONS = [
    ["once", "Allow once", ""],
    ["session", "Allow for the session", "quiet"],
    ["deny", "Deny", "danger"],
  ];
  const APPROVAL_SAID = { once: "Allowed once.", session: "Allowed for this session.", deny: "Denied." };

  async function answerApproval(details, id, decision) {
    const box = details.approval;
    details.approval = null; // answered here: the call's end no longer removes the box
    for (const button of box.querySelectorAll("button")) button.disabled = true;
    let said = APPROVAL_SAID[decision];
    try {
      await apiJson("POST", "/api/approve", { id, decision });
      const finished = details.classList.contains("ok") || details.classList.contains("failed");
      if (!finished) details.querySelector(".tool-state").textContent = decision === "deny" ? "denied" : "running…";
    } catch (e) {
      said = `Not answered: ${e.message}`;
    }
    box.replaceChildren(el("span", "approval-said", said));
  }

  // The question is over (answered, or its call finished): the buttons go, a line says what happened.
  function closeApproval(details, said) {
    const box = details && details.approval;
    if (!box) return;
    details.approval = null;
    if (said) box.replaceChildren(el("span", "approval-said", said));
    else box.remove();
  }

  function finishToolCall(details, result) {
    const state = details.querySelector(".tool-state");
    state.textContent = result.ok === false ? "failed" : "done";
    if (result.seconds !== undefined) state.textContent += ` · ${result.seconds.toFixed(1)} s`;
    details.classList.add(result.ok === false ? "failed" : "ok");
    details.append(resultNode(details.dataset.tool, result.text));
  }

  // edit_file's result is a numbered diff ("+  12<TAB>text", "-  12<TAB>text"): one span per
  // line, coloured by its own marker; the text still goes in as textContent.
  function resultNode(name, text) {
    if (name !== "edit_file" || !/^Edited /.test(text || "")) return el("pre", "tool-result", text);
    const pre = el("pre", "tool-result diff");
    for (const line of text.split("\n")) {
      const kind = /^\+ *\d+\t/.test(line) ? "diff-add" : /^- *\d+\t/.test(line) ? "diff-del" : "diff-line";
      pre.append(el("span", kind, line), document.createTextNode("\n"));
    }
    return pre;
  }

  function formatArgs(args) {
    if (typeof args === "string") {
      try {
        return JSON.stringify(JSON.parse(args), null, 2);
      } catch (e) {
        return args;
      }
    }
    return JSON.stringify(args || {}, null, 2);
  }

  const FILE_STATUS = { added: "added", modified: "modified", deleted: "deleted" };

  // The files one turn changed (its checkpoint); paths are the workspace's, shown as plain text.
  function renderFiles(container, number, files) {
    const box = el("div", "msg files");
    const count = `${files.length} file${files.length === 1 ? "" : "s"}`;
    box.append(el("p", "note", `Changed ${count} · checkpoint ${number} ('hermes-tui checkpoints restore ${number}' undoes it)`));
    const list = el("ul", "file-list");
    for (const f of files) {
      const status = FILE_STATUS[f.status] || "modified";
      list.append(el("li", `file ${status}`, `${status} ${f.path}`));
    }
    box.append(list);
    container.append(box);
  }

  function renderTranscript(view, messages, checkpoints) {
    const calls = new Map();
    const byTurn = new Map((checkpoints || []).map((c) => [c.turn, c]));
    let turn = -1;
    const endTurn = () => {
      const c = byTurn.get(turn);
      if (c) renderFiles(view, c.number, c.files);
    };
    for (const m of messages) {
      if (m.role === "user") {
        endTurn();
        turn += 1;
        const msg = el("div", "msg user", m.text);
        msg.dataset.messageId = m.id;
        (m.images || []).forEach((name) => msg.append(el("div", "meta", `image: ${name}`)));
        view.append(msg);
      } else if (m.role === "assistant") {
        const msg = el("div", "msg assistant");
        msg.dataset.messageId = m.id;
        if (m.html) {
          const body = el("div", "rendered");
          setRendered(body, m.html);
          msg.append(body);
        }
        for (const call of m.tool_calls) calls.set(call.id, renderToolCall(msg, call));
        view.append(msg);
      } else if (m.role === "tool") {
        const details = calls.get(m.tool_call_id);
        if (details) {
          details.dataset.messageId = m.id;
          finishToolCall(details, { text: m.text, ok: m.status === "ok" });
        }
      }
    }
    endTurn();
  }

  let shown = null; // the session open in the transcript view: its id and messages

  // ``messageId``: a memory hit; the transcript opens at that message, marked.
  async function openTranscript(id, messageId) {
    const data = await apiJson("GET", `/api/sessions/${encodeURIComponent(id)}`);
    shown = data;
    const view = $("transcript");
    view.replaceChildren();
    renderTranscript(view, data.messages, data.checkpoints);
    if (!data.messages.length) view.append(el("p", "empty", "This session has no messages."));
    $("transcript-id").textContent = `#${data.session.id}`;
    const live = data.session.id === currentSession;
    $("transcript-kind").textContent = live ? "your live conversation" : "read-only";
    $("resume-session").textContent = live ? "Continue" : "Resume";
    $("delete-session").hidden = live; // the open conversation cannot be deleted
    $("delete-confirm").hidden = true;
    showTranscript(true);
    const hit = messageId ? view.querySelector(`[data-message-id="${Number(messageId)}"]`) : null;
    if (hit) {
      hit.classList.add("hit");
      if (hit.tagName === "DETAILS") hit.open = true;
      hit.scrollIntoView({ block: "center" });
    } else {
      view.scrollTop = 0;
    }
  }

  function showTranscript(on) {
    $("transcript").hidden = !on;
    $("transcript-bar").hidden = !on;
    $("messages").hidden = on;
    $("chat-form").hidden = on;
    $("queued").hidden = on;
    if (!on) $("delete-confirm").hidden = true;
  }

  // The chat shows ``messages`` as the live conversation (after a reload, a resume).
  function showConversation(messages) {
    const container = $("messages");
    container.replaceChildren();
    renderTranscript(container, messages);
    showTranscript(false);
    toBottom(container);
  }

  $("back-to-chat").addEventListener("click", () => showTranscript(false));

  async function newSession() {
    try {
      const data = await apiJson("POST", "/api/sessions");
      currentSession = data.id;
      $("messages").replaceChildren(el("p", "empty", `New session #${data.id}.`));
      showTranscript(false);
      await loadSessions();
    } catch (e) {
      setStatus(e.message);
    }
  }

  $("new-session").addEventListener("click", () => {
    // As /new does: in the queue, so a message sent while it opens waits and goes into it.
    if (!busy) work("/new");
  });

  $("resume-session").addEventListener("click", async () => {
    if (!shown) return;
    const id = shown.session.id;
    if (id === currentSession) {
      showTranscript(false); // it is the chat's already: go on there
      toBottom($("messages"));
      return;
    }
    if (busy) {
      setStatus("A turn is running: wait for it or stop it, then resume.");
      return;
    }
    try {
      await apiJson("POST", `/api/sessions/${encodeURIComponent(id)}/resume`);
      currentSession = id;
      showConversation(shown.messages);
      setStatus(`Resumed session #${id}.`);
      await loadSessions();
    } catch (e) {
      setStatus(e.message);
    }
  });

  $("delete-session").addEventListener("click", () => {
    if (!shown) return;
    $("delete-id").textContent = `#${shown.session.id}`;
    $("delete-confirm").hidden = false;
    $("delete-no").focus();
  });

  $("delete-no").addEventListener("click", () => {
    $("delete-confirm").hidden = true;
  });

  $("delete-yes").addEventListener("click", async () => {
    if (!shown) return;
    const id = shown.session.id;
    try {
      await apiJson("DELETE", `/api/sessions/${encodeURIComponent(id)}`);
      shown = null;
      showTranscript(false);
      setStatus(`Deleted session #${id}.`);
    } catch (e) {
      setStatus(e.message);
    }
    $("delete-confirm").hidden = true;
    await loadSessions();
  });

  // ---------------------------------------------------------------- chat

  let busy = false; // a message and those queued behind it are being worked through
  const queued = []; // {text, node}: typed while busy, sent in order when the turn ends

  // A turn (or a compaction) runs: Stop shows, what cannot wait for it is off.
  function setRunning(on) {
    $("stop").hidden = !on;
    $("new-session").disabled = on;
    $("compact").disabled = on;
  }

  class TurnView {
    constructor(container) {
      this.container = container;
      this.block = null; // the assistant text block being streamed
      this.tools = new Map();
      this.unsent = false; // the turn failed before any answer: the message is back in the box
    }

    text(delta) {
      if (!this.block) {
        this.block = el("div", "msg assistant streaming");
        this.container.append(this.block);
      }
      this.block.append(document.createTextNode(delta));
    }

    html(html) {
      if (!this.block) return;
      this.block.replaceChildren();
      this.block.classList.remove("streaming");
      const body = el("div", "rendered");
      setRendered(body, html);
      this.block.append(body);
      this.block = null;
    }

    toolStarted(event) {
      this.block = null;
      const holder = el("div", "msg tools");
      this.container.append(holder);
      this.tools.set(event.id, renderToolCall(holder, event));
    }

    toolFinished(event) {
      const details = this.tools.get(event.id);
      closeApproval(details, "");
      if (details) finishToolCall(details, { text: event.result, ok: event.ok, seconds: event.seconds });
    }

    // The turn waits for this call's answer: the whole call is shown (opened) with three buttons.
    approvalNeeded(event) {
      const details = this.tools.get(event.id);
      if (!details) return;
      details.open = true;
      details.querySelector(".tool-state").textContent = "waiting for your approval";
      const box = el("div", "approval");
      // A write through a symlinked folder: the file it really replaces, which the answer allows.
      const target = event.target ? ` It writes ${event.target} (via ${event.arguments.path}).` : "";
      // Several sub-agents may ask in turn: the question names the one whose call it is.
      const who = event.agent ? ` Asked by ${event.agent}.` : "";
      box.append(el("span", "approval-question", `Allow this ${event.name} call?${target}${who}`));
      for (const [decision, label, kind] of APPROVAL_BUTTONS) {
        const button = el("button", kind, label);
        button.type = "button";
        button.dataset.decision = decision;
        button.addEventListener("click", () => answerApproval(details, event.id, decision));
        box.append(button);
      }
      details.after(box);
      details.approval = box;
    }

    note(text, className) {
      this.container.append(el("p", className || "note", text));
    }
  }

  // Put ``text`` back in the message box, before what is typed there now: nothing typed is lost.
  function giveBack(text) {
    const input = $("chat-input");
    input.value = input.value.trim() ? `${text}\n${input.value}` : text;
  }

  // Returns false when the message did not go through (it is back in the box).
  async function sendMessage(text) {
    const container = $("messages");
    container.querySelectorAll(":scope > .empty").forEach((node) => node.remove());
    const bubble = el("div", "msg user", text);
    container.append(bubble);
    toBottom(container); // the reader just sent it: show it, and follow the answer from here
    const view = new TurnView(container);
    setRunning(true);
    setStatus("thinking…");
    try {
      const response = await api("POST", "/api/chat", { message: text });
      if (!response.ok) {
        const data = await response.json().catch(() => ({}));
        bubble.remove();
        giveBack(text);
        view.note(data.error || `Error ${response.status}`, "error");
        return false;
      }
      await readLines(response, (event) => handleEvent(view, event));
      return !view.unsent;
    } catch (e) {
      if (e.message !== "logged out") view.note(`Connection lost: ${e.message}`, "error");
      return false;
    } finally {
      setRunning(false);
      setStatus("");
      loadSessions().catch(() => {});
      loadMcp().catch(() => {});
    }
  }

  // ---------------------------------------------------------------- commands and the queue

  // The commands the page runs itself: their names are in the help card (web/commands.py).
  const pageCommands = new Set([...document.querySelectorAll("#help-card [data-command]")]
    .map((node) => node.dataset.command));

  function pageCommand(text) {
    const match = /^\/(\S+)(?:\s+([\s\S]*))?$/.exec(text.trim());
    const name = match ? match[1].toLowerCase() : "";
    return pageCommands.has(name) ? { name, argument: (match[2] || "").trim() } : null;
  }

  function showHelp() {
    const card = $("help-card");
    card.hidden = false;
    card.scrollIntoView({ block: "nearest" });
  }

  $("help-close").addEventListener("click", () => {
    $("help-card").hidden = true;
  });

  // One message or page command; false when it failed (and what was typed is back in the box).
  async function run(text) {
    const command = pageCommand(text);
    if (command && command.name === "compact") {
      const ok = await compactConversation(command.argument);
      if (!ok) giveBack(text);
      return ok;
    }
    if (command && command.name === "new") {
      await newSession();
      return true;
    }
    return sendMessage(text); // other slash words: the server refuses them with one line
  }

  function enqueue(text) {
    const node = el("div", "msg user queued");
    const takeBack = el("button", "quiet take-back", "Edit");
    takeBack.type = "button";
    takeBack.title = "take this message back into the box";
    node.append(el("span", "queued-label", "queued"), el("span", "queued-text", text), takeBack);
    const entry = { text, node };
    takeBack.addEventListener("click", () => {
      const at = queued.indexOf(entry);
      if (at >= 0) queued.splice(at, 1);
      node.remove();
      giveBack(text);
    });
    queued.push(entry);
    $("queued").append(node); // above the box, where it stays put while the answer streams
  }

  // Run ``text``, then what was queued meanwhile, in order. When one fails, the rest go back
  // into the box after it rather than being sent into a conversation that just failed.
  async function work(text) {
    busy = true;
    try {
      let next = text;
      while (next !== undefined) {
        const ok = await run(next);
        const entry = queued.shift();
        if (!entry) break;
        entry.node.remove();
        if (ok) {
          next = entry.text;
          continue;
        }
        for (const rest of [entry, ...queued.splice(0)]) {
          rest.node.remove();
          const input = $("chat-input");
          input.value = input.value.trim() ? `${input.value}\n\n${rest.text}` : rest.text;
        }
        new TurnView($("messages")).note("The queued messages were not sent after the failure: they are in the box.");
        break;
      }
    } finally {
      busy = false;
    }
  }

  function submit(text) {
    if (pageCommand(text)?.name === "help") showHelp();
    else if (busy) enqueue(text);
    else work(text);
  }

  function showContext(usage) {
    if (!usage.context_limit) return;
    const share = Math.round((100 * usage.context_tokens) / usage.context_limit);
    $("context").textContent = `context ${share}%`;
  }

  // Returns false when it could not run (the reason is shown).
  async function compactConversation(focus) {
    const container = $("messages");
    const view = new TurnView(container);
    setRunning(true);
    setStatus("compacting…");
    try {
      const response = await api("POST", "/api/chat/compact", { focus: focus || null });
      const data = await response.json().catch(() => ({}));
      if (!response.ok) {
        view.note(data.error || `Error ${response.status}`, "error");
        return false;
      }
      data.notices.forEach((text) => view.note(text));
      showContext(data);
      return true;
    } catch (e) {
      if (e.message !== "logged out") view.note(`Connection lost: ${e.message}`, "error");
      return false;
    } finally {
      setRunning(false);
      setStatus("");
    }
  }

  async function readLines(response, onEvent) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let newline;
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, newline).trim();
        buffer = buffer.slice(newline + 1);
        if (line) onEvent(JSON.parse(line));
      }
    }
  }

  function handleEvent(view, event) {
    const container = view.container;
    const atBottom = nearBottom(container); // before this event adds anything
    switch (event.type) {
      case "turn_started":
        currentSession = event.session_id;
        break;
      case "text_delta":
        setStatus("answering…");
        view.text(event.text);
        break;
      case "text_html":
        view.html(event.html);
        break;
      case "tool_call_started":
        setStatus(`running ${event.name}…`);
        view.toolStarted(event);
        break;
      case "tool_call_finished":
        view.toolFinished(event);
        break;
      case "subagent": {
        // A sub-agent's own tool calls show as calls of the turn (marked), so a question one of
        // them asks (a plain approval_needed naming the sub-agent) has its call to stand under.
        const inner = event.event;
        if (inner.type === "tool_call_started") {
          view.toolStarted({ ...inner, name: `↳ ${inner.name}` });
        } else if (inner.type === "tool_call_finished") {
          view.toolFinished(inner);
        }
        break;
      }
      case "approval_needed":
        setStatus(`waiting for your approval of ${event.name}…`);
        view.approvalNeeded(event);
        break;
      case "notice":
        view.note(event.message);
        break;
      case "files_changed":
        view.block = null;
        renderFiles(container, event.checkpoint, event.files);
        break;
      case "receipt":
        view.note(event.text, "receipt");
        loadFacts().catch(() => {});
        break;
      case "error":
        view.note(event.message, "error");
        break;
      case "unsent": {
        view.unsent = true;
        giveBack(event.text);
        view.note("Not sent: the turn failed before any answer, so your message is back in the box and "
          + "out of the conversation. Send it again, or edit it first if it caused the error.");
        break;
      }
      case "skill_learned":
        view.note(`${event.created ? "Learned" : "Refined"} skill ${event.name} (v${event.version})`);
        loadSkills().catch(() => {});
        break;
      case "usage":
        showContext(event);
        break;
      case "turn_finished":
        if (event.stopped_reason === "cancelled") view.note("Stopped.", "stopped");
        setStatus(event.tool_calls >= 3 ? "learning from this turn…" : "");
        $("stop").hidden = true;
        break;
      default:
        break; // keepalive: nothing to show
    }
    if (atBottom) container.scrollTop = container.scrollHeight;
  }

  $("chat-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = $("chat-input");
    const text = input.value.trim();
    if (!text) return;
    input.value = "";
    submit(text);
  });

  $("chat-input").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("chat-form").requestSubmit();
    }
  });

  // An image for the next message: uploaded at once (POST /api/images), checked and kept by the server.
  $("attach-image").addEventListener("change", async (event) => {
    const input = event.target;
    const file = input.files && input.files[0];
    input.value = "";
    if (!file) return;
    const view = new TurnView($("messages"));
    const form = new FormData();
    form.append("image", file, file.name);
    try {
      const response = await fetch("/api/images", {
        method: "POST", body: form, credentials: "same-origin", headers: { "X-CSRF-Token": csrf },
      });
      if (response.status === 401) {
        window.location.assign("/login");
        return;
      }
      const data = await response.json().catch(() => ({}));
      if (!response.ok) {
        view.note(`Not attached: ${data.error || `Error ${response.status}`}`, "error");
        return;
      }
      view.note(`Attached ${data.attached}: it goes with your next message.`);
    } catch (e) {
      view.note(`Connection lost: ${e.message}`, "error");
    }
  });

  $("compact").addEventListener("click", () => {
    if (!busy) work("/compact");
  });

  $("stop").addEventListener("click", async () => {
    setStatus("stopping…");
    try {
      await apiJson("POST", "/api/chat/cancel");
    } catch (e) {
      setStatus(e.message);
    }
  });

  // ---------------------------------------------------------------- skills

  async function loadSkills() {
    const data = await apiJson("GET", "/api/skills");
    const list = $("skill-list");
    list.replaceChildren();
    if (!data.skills.length) list.append(el("li", "empty", "No skills yet."));
    for (const s of data.skills) {
      const item = el("li");
      const button = el("button", "skill-item");
      button.type = "button";
      button.append(el("span", "title", s.name), el("span", "meta", s.description));
      button.addEventListener("click", () => openSkill(s.name));
      item.append(button);
      list.append(item);
    }
    // Held back: quarantined by the skill guard (approve or delete), or skipped, with the reason.
    const held = $("skill-held");
    held.replaceChildren();
    for (const h of data.held_back || []) {
      const item = el("li", h.quarantined ? "quarantined" : "skipped");
      item.append(el("span", "title", `${h.name || h.path} (${h.quarantined ? "quarantined" : "skipped"})`),
                  el("span", "meta", h.reason));
      if (h.quarantined) {
        item.append(skillButton("Approve", () => apiJson("POST", skillUrl(h.name, "/approve"))),
                    skillButton("Delete", () => apiJson("DELETE", skillUrl(h.name, ""))));
      }
      held.append(item);
    }
  }

  function skillUrl(name, tail) {
    return `/api/skills/${name.split("/").map(encodeURIComponent).join("/")}${tail}`;
  }

  function skillButton(label, action) {
    const button = el("button", "skill-action", label);
    button.type = "button";
    button.addEventListener("click", async () => {
      try {
        await action();
      } catch (e) {
        setStatus(e.message);
      }
      await loadSkills();
    });
    return button;
  }

  async function openSkill(name) {
    const s = await apiJson("GET", skillUrl(name, ""));
    $("skill-name").textContent = s.name;
    $("skill-meta").textContent = `v${s.version} · used ${s.use_count}× · ${s.triggers.join(", ")}`;
    $("skill-description").textContent = s.description;
    setRendered($("skill-body"), s.html);
    const v = await apiJson("GET", skillUrl(name, "/versions"));
    const actions = $("skill-actions");
    actions.replaceChildren(el("span", "", `versions: ${v.versions.map((x) => x.label).join(", ")}`));
    const pending = v.versions.filter((x) => x.kind === "pending");
    if (pending.length) {
      const label = pending[pending.length - 1].label;
      actions.append(skillButton(`Accept ${label}`, async () => {
        await apiJson("POST", skillUrl(name, "/accept"), { label });
        await openSkill(name);
      }));
    }
    actions.hidden = false;
    $("skill-diff").textContent = v.diff;  // plain text: a diff of untrusted files
    $("skill-diff").hidden = !v.diff;
    $("skill-detail").hidden = false;
  }

  // ---------------------------------------------------------------- memory

  $("memory-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const q = $("memory-q").value.trim();
    const list = $("memory-results");
    list.replaceChildren();
    if (!q) return;
    try {
      const data = await apiJson("GET", `/api/memory/search?q=${encodeURIComponent(q)}`);
      if (!data.hits.length) list.append(el("li", "empty", "No matches."));
      for (const hit of data.hits) {
        const item = el("li");
        const button = el("button", "hit");
        button.type = "button";
        const snippet = el("span", "snippet");
        setSanitizedHtml(snippet, hit.html); // escaped on the server; only <mark> added
        button.append(snippet, el("span", "meta", `#${hit.session_id} · ${hit.role} · ${when(hit.created)}`));
        button.addEventListener("click", () => openTranscript(hit.session_id, hit.message_id));
        item.append(button);
        list.append(item);
      }
    } catch (e) {
      list.append(el("li", "error", e.message));
    }
  });

  // ---------------------------------------------------------------- remembered facts

  async function loadFacts() {
    const data = await apiJson("GET", "/api/facts");
    const list = $("fact-list");
    list.replaceChildren();
    if (!data.facts.length) list.append(el("li", "empty", "Nothing remembered yet."));
    for (const f of data.facts) {
      const item = el("li", "fact");
      item.append(el("span", "meta", `${f.scope} · ${f.id}`), el("span", "title", f.text));
      const forget = el("button", "skill-action", "Forget");
      forget.type = "button";
      forget.addEventListener("click", async () => {
        try {
          await apiJson("DELETE", `/api/facts/${encodeURIComponent(f.id)}`);
        } catch (e) {
          setStatus(e.message);
        }
        await loadFacts();
      });
      item.append(forget);
      list.append(item);
    }
  }

  // ---------------------------------------------------------------- MCP servers

  // The panel is the server's markup: its template escapes every value a server sent, and
  // render.py cleans it again.
  let mcpTimer = null;

  async function loadMcp() {
    const data = await apiJson("GET", "/api/mcp");
    $("mcp").hidden = !data.servers.length && !data.problems.length;
    setSanitizedHtml($("mcp-panel"), data.html); // escaped by mcp_panel.html, cleaned by render.py
    clearTimeout(mcpTimer);
    if (data.servers.some((s) => s.state === "starting")) {
      mcpTimer = setTimeout(() => loadMcp().catch(() => {}), 2000);
    }
  }

  // ---------------------------------------------------------------- start

  async function start() {
    await Promise.all([loadSessions(), loadSkills(), loadFacts(), loadMcp()]);
    if (currentSession !== null) {
      // After a reload, show this browser's live conversation where the chat goes on.
      const data = await apiJson("GET", `/api/sessions/${currentSession}`);
      if (data.messages.length) showConversation(data.messages);
    }
  }

  start().catch((e) => setStatus(e.message));
})();
