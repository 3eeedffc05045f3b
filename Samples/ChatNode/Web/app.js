// The chat node's browser client. It speaks the IM protocol of docs/PROTOCOL.md as JSON text
// messages on the node's WebSocket (/ws, section 13 of that document): login, rooms, direct messages,
// paged history, each own message's delivery, reconnect with exponential backoff and jitter, a
// heartbeat with an answer deadline, resend under the same id, and de-duplication of what arrives;
// it keeps to the node's limits: messages over its size limit are refused before they are sent, and
// a rate-limit refusal pauses every message so they reach the node in order. In a large room (more
// members than the size LOGIN_ACK announces) the node sends no presence of its members, so the page
// says their presence is unknown instead of letting silence read as "offline".
"use strict";

const KEEPALIVE_SECONDS = 20;    // promised in LOGIN: the node drops us after 1.5 × this of silence
const HEARTBEAT_MS = 8000;       // a HEARTBEAT after this long without sending anything
const ANSWER_TIMEOUT_MS = 8000;  // after a request some frame must arrive within this, or the link is dead
const ACK_TIMEOUT_MS = 10000;    // a SEND without SEND_ACK this long is sent again (same id)
const BACKOFF_FIRST_MS = 500;
// A person waits at most about this long after the node is back (a click on the badge: at once).
const BACKOFF_MAX_MS = 10000;
const STABLE_SESSION_MS = 10000;  // only a session online this long resets the backoff
const MIN_RATE_PAUSE_MS = 50;     // the shortest rate-limit pause, whatever the node says
// The largest SEND body (the ChatMessage as protobuf) until LOGIN_ACK announces limits.maxSendBody:
// the node's default 64 KiB frame less the 128 bytes it adds to make the DELIVER.
const DEFAULT_MAX_SEND_BODY = 65536 - 128;
// One program instance (this page load) across its reconnects: a login with the same instance
// replaces the session a dead link may still hold at the node.
const CLIENT_INSTANCE = newID();
// Messages per history page; `?historyPage=N` in the page's address changes it.
const HISTORY_PAGE = Math.min(500, Math.max(1, Number(new URLSearchParams(location.search).get("historyPage")) || 20));
const STATUS = { 0: "ok", 1: "bad request", 3: "too large", 4: "authentication failed", 7: "too many connections",
  8: "rate limited", 9: "unknown recipient", 10: "node shutting down", 11: "keepalive timeout", 12: "unknown command",
  13: "internal error", 14: "not a member", 15: "session replaced", 16: "too many rooms", 17: "too slow" };

const $ = (id) => document.getElementById(id);

const app = {
  user: null,
  password: null,
  ws: null,
  online: false,
  wantsConnection: false,   // false after a logout or a refused login: no reconnect
  serial: 0,
  pending: new Map(),       // serial → what the answer is for
  answerDeadline: null,     // ping-pong: the link is dead if nothing arrives by then
  lastSent: 0,
  attempts: 0,
  onlineSince: null,        // when the current session logged in
  everOnline: false,        // a session of this login was online: the next one is a reconnect
  closingWhy: null,         // what the node's ERROR said: why the close that follows it happened
  restarting: false,        // the node said it stops (shuttingDown, close 1001): said until the next login
  retryFloor: 0,            // the node's retryAfterMs for the next reconnect (a refusal for now, an ERROR)
  reconnectAt: null,
  reconnectTimer: null,
  maxSendBody: DEFAULT_MAX_SEND_BODY,
  largeRoomMembers: 0,      // LOGIN_ACK's limits.largeRoomMembers; 0: the node has no large rooms
  pausedUntil: null,        // after SEND_ACK rateLimited: nothing is sent before this
  outbox: new Map(),        // id → own message not yet settled: {id, conv, text, state, sentAt}
  seen: new Set(),          // "from\0id" of every message shown: each one once
  conversations: new Map(), // "room:NAME" | "user:NAME" → conversation
  current: null,
  onlineUsers: new Set(),
  rooms: [],
};

// MARK: connection

function connect() {
  clearTimeout(app.reconnectTimer);
  app.reconnectAt = null;
  setConnection("connecting", "connecting…");
  if (app.restarting) notice("the node is restarting; reconnecting…");
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(`${scheme}//${location.host}/ws`);
  app.ws = ws;
  // The opening handshake and the login answer share the answer deadline: a node that swallows the
  // connection attempt (a black hole, not a refusal) is given up on as fast as a silent one.
  app.answerDeadline = Date.now() + ANSWER_TIMEOUT_MS;
  // A late event from an older socket changes nothing: every handler checks it is still the current one.
  ws.onopen = () => {
    if (ws !== app.ws) return;
    // presenceBatches: we read PRESENCE_BATCH, so a login's snapshot comes in a few frames, not one a contact.
    request("LOGIN", { user: app.user, password: app.password, keepaliveSeconds: KEEPALIVE_SECONDS, clientName: "chat-node page",
      clientInstance: CLIENT_INSTANCE, presenceBatches: true });
  };
  ws.onmessage = (event) => {
    if (ws !== app.ws) return;
    let frame;
    try {
      frame = JSON.parse(event.data);
    } catch {
      return dropConnection("the node sent something that is not JSON");
    }
    received(frame);
  };
  ws.onclose = (event) => {
    if (ws !== app.ws) return;
    if (event.code === 1001) app.restarting = true;  // going away: the node stops
    lost(`closed ${event.code}${event.reason ? ` (${event.reason})` : ""}`);
  };
}

/// Ends the current socket at once (a dead link never completes a close handshake) and reconnects.
function dropConnection(why) {
  const ws = app.ws;
  if (!ws) return;
  ws.onclose = null;
  try { ws.close(4000, "client gave up on the link"); } catch { /* already closing */ }
  lost(why);
}

function lost(why) {
  // The node's own words, when it said why before closing, tell more than the close code.
  const said = app.closingWhy;
  app.closingWhy = null;
  app.ws = null;
  app.online = false;
  renderOnline();
  app.pending.clear();
  app.answerDeadline = null;
  // Sent but not acknowledged: sent again, same id, after the next login (the node de-duplicates).
  for (const entry of app.outbox.values()) if (entry.state === "sent") setMessageState(entry, "queued");
  setComposer();
  // Only a session that lasted proves the node healthy: one dropped right after each login keeps
  // the waits growing.
  if (app.onlineSince !== null && Date.now() - app.onlineSince >= STABLE_SESSION_MS) app.attempts = 0;
  app.onlineSince = null;
  if (!app.wantsConnection) return setConnection("offline", "offline");
  // Exponential backoff with a cap; up to half of each wait removed at random, so many pages that
  // lost the same node do not all come back at the same instant.
  const base = Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** app.attempts);
  let wait = base - Math.random() * base / 2;
  // The node said when to come back: no sooner, and up to a quarter later at random, so the pages
  // it turned away together do not return together.
  if (app.retryFloor > 0) wait = Math.max(wait, app.retryFloor * (1 + Math.random() / 4));
  app.retryFloor = 0;
  app.attempts += 1;
  app.reconnectAt = Date.now() + wait;
  app.reconnectTimer = setTimeout(connect, wait);
  if (!app.restarting) notice(`connection lost: ${said || why}`);
  showCountdown();
}

function showCountdown() {
  if (app.reconnectAt === null) return;
  const seconds = Math.max(0, (app.reconnectAt - Date.now()) / 1000);
  setConnection("reconnecting", `reconnecting in ${seconds.toFixed(1)} s`);
  if (app.restarting) notice(`the node is restarting; reconnecting in ${Math.ceil(seconds)} s`);
}

/// The badge: hidden until the first login attempt; a click on it while waiting to reconnect retries now.
function setConnection(state, text) {
  const element = $("conn");
  element.hidden = false;
  element.dataset.state = state;
  element.textContent = text;
  element.title = state === "reconnecting" ? "click to retry now" : "";
  // Offline, the page no longer hears who comes and goes: what it shows is greyed, not trusted.
  $("online").classList.toggle("stale", state !== "online");
}

/// Sends one frame; requests (anything that expects an answer) start the answer deadline.
function send(command, body, expectsAnswer) {
  if (!app.ws || app.ws.readyState !== WebSocket.OPEN) return null;
  app.serial = app.serial >= 4294967295 ? 1 : app.serial + 1;
  const frame = { command, serial: app.serial };
  if (body !== undefined) frame.body = body;
  app.ws.send(JSON.stringify(frame));
  app.lastSent = Date.now();
  if (expectsAnswer && app.answerDeadline === null) app.answerDeadline = Date.now() + ANSWER_TIMEOUT_MS;
  return app.serial;
}

function request(command, body, context = {}) {
  const serial = send(command, body, true);
  if (serial !== null) app.pending.set(serial, { command, ...context });
  return serial;
}

/// Heartbeat, answer deadline, ack timeouts and the reconnect countdown: one tick for all.
function tick() {
  const now = Date.now();
  showCountdown();
  if (!app.ws) return;
  if (app.answerDeadline !== null && now > app.answerDeadline) return dropConnection("no answer from the node");
  if (!app.online) return;
  if (now - app.lastSent >= HEARTBEAT_MS) request("HEARTBEAT");
  if (app.pausedUntil !== null) {
    if (now < app.pausedUntil) return;
    app.pausedUntil = null;
    if ($("notice").textContent.startsWith("rate limited")) notice("");
  }
  // In outbox order: what the rate limit put back, and what went unacknowledged too long.
  for (const entry of app.outbox.values()) {
    if (entry.state === "queued" || (entry.state === "sent" && now - entry.sentAt >= ACK_TIMEOUT_MS)) transmit(entry);
  }
}

function isPaused() {
  return app.pausedUntil !== null && Date.now() < app.pausedUntil;
}

// MARK: frames from the node

function received(frame) {
  const context = app.pending.get(frame.serial);
  const isAnswer = context !== undefined && !["DELIVER", "PRESENCE", "PRESENCE_BATCH", "MEMBERSHIP"].includes(frame.command);
  if (isAnswer) app.pending.delete(frame.serial);
  // Every frame proves the link; the deadline runs on only while answers are still owed.
  app.answerDeadline = app.pending.size > 0 ? Date.now() + ANSWER_TIMEOUT_MS : null;
  const body = frame.body || {};
  const code = frame.code || 0;
  switch (frame.command) {
    case "LOGIN_ACK": return loginAnswered(code, body);
    case "HEARTBEAT":  // the node's ping: answered with the same serial
      app.ws.send(JSON.stringify({ command: "HEARTBEAT_ACK", serial: frame.serial }));
      return undefined;
    case "SEND_ACK": return sendAnswered(code, body);
    case "DELIVER":
      send("DELIVER_ACK", { seqs: [body.seq] }, false);  // duplicates too: the node must forget them
      return show(body);
    case "JOIN_ACK":
    case "LEAVE_ACK": return roomAnswered(frame.command, code, body, context);
    case "ROOM_LIST": return showRooms(body.rooms || []);
    case "HISTORY_PAGE": return historyAnswered(code, body, context);
    case "PRESENCE": return presence([body]);
    case "PRESENCE_BATCH": return presence(body.notices || []);  // many PRESENCE notices, in their order
    case "MEMBERSHIP": return membership(body);
    case "ERROR":
      // tooManyConnections, shuttingDown: the node may say when to come back.
      if (body.retryAfterMs) app.retryFloor = Number(body.retryAfterMs);
      if (code === 10) {
        app.restarting = true;
        return notice("the node is restarting");
      }
      app.closingWhy = body.message || STATUS[code] || String(code);
      return notice(`the node closes the connection: ${app.closingWhy}`);
    default: return undefined;  // a command this page does not know: ignored, as the protocol asks
  }
}

function loginAnswered(code, body) {
  if (code !== 0) {
    if (code === 4) {
      // Retrying a wrong password would not help: close without the reconnect that lost() starts.
      app.wantsConnection = false;
      const ws = app.ws;
      ws.onclose = null;
      ws.close(1000);
      app.ws = null;
      app.pending.clear();
      app.answerDeadline = null;
      $("login-error").textContent = body.reason || "unknown user or wrong password";
      $("chat").hidden = true;
      $("login-form").hidden = false;
      return setConnection("refused", "login refused");
    }
    // Too many sessions, too many logins at once, stopping: the node closes; we retry, no sooner
    // than it says.
    if (body.retryAfterMs) app.retryFloor = Number(body.retryAfterMs);
    if (code === 10) app.restarting = true;
    return notice(`login refused for now: ${body.reason || STATUS[code] || code}`);
  }
  app.online = true;
  app.onlineSince = Date.now();
  // The snapshot that follows is the whole truth: forget what an earlier session knew.
  app.onlineUsers.clear();
  renderOnline();
  app.maxSendBody = (body.limits && Number(body.limits.maxSendBody)) || DEFAULT_MAX_SEND_BODY;
  app.largeRoomMembers = (body.limits && Number(body.limits.largeRoomMembers)) || 0;
  setConnection("online", "online");
  // The node made the account at this login: said once, as later logins are not its first.
  notice(body.accountCreated ? "account created" : app.everOnline ? "reconnected" : "");
  app.everOnline = true;
  app.restarting = false;
  $("login-form").hidden = true;
  $("chat").hidden = false;
  $("logout").hidden = false;
  $("me").textContent = app.user;
  setComposer();
  if (app.current === null) setDrawer(true);  // on a phone: nothing to read yet, the rooms to pick from
  request("LIST_ROOMS");
  for (const entry of app.outbox.values()) {
    // Queued while away and over the limit the node just announced: it would be refused.
    if (sendBodySize(entry) > app.maxSendBody) {
      app.outbox.delete(entry.id);
      setMessageState(entry, "failed", tooLargeText());
    } else if (!isPaused()) {
      transmit(entry);
    }
  }
  // What arrived while away comes as DELIVERs from the inbox; the open conversation's newest page is
  // fetched too (merged without duplicates), so its history has no hole either.
  if (app.current) loadHistory(app.conversations.get(app.current), "latest");
}

// MARK: own messages

function newID() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/// The length of a SEND body as the node judges it: the ChatMessage {id, room or user, text} in
/// protobuf's binary encoding (fields 1, 4 or 5, and 6: a tag byte, a varint length, the UTF-8 bytes).
function sendBodySize(message) {
  const conversation = app.conversations.get(message.conv);
  const encoder = new TextEncoder();
  let size = 0;
  for (const value of [message.id, conversation ? conversation.name : "", message.text]) {
    const bytes = encoder.encode(value).length;
    if (bytes === 0) continue;  // proto3 leaves empty strings out
    let varint = 1;
    for (let rest = bytes; rest >= 128; rest = Math.floor(rest / 128)) varint += 1;
    size += 1 + varint + bytes;
  }
  return size;
}

function tooLargeText() {
  return `too large (limit ${app.maxSendBody} bytes)`;
}

/// Whether the composer's text was taken: false (and why shown) when it is over the node's limit.
function submitMessage(text) {
  const conversation = app.conversations.get(app.current);
  if (!conversation || text.trim() === "") return true;
  const entry = { id: newID(), conv: conversation.key, text, state: "queued", sentAt: 0 };
  if (sendBodySize(entry) > app.maxSendBody) {
    $("composer-error").textContent = tooLargeText();
    return false;
  }
  $("composer-error").textContent = "";
  app.outbox.set(entry.id, entry);
  app.seen.add(`${app.user}\u0000${entry.id}`);
  entry.element = messageElement({ from: app.user, id: entry.id, text }, conversation);
  conversation.list.append(entry.element);
  setMessageState(entry, "queued");
  scrollDown(conversation);  // one's own message is always shown, wherever the view was
  if (app.online && !isPaused()) transmit(entry);
  return true;
}

function transmit(entry) {
  const conversation = app.conversations.get(entry.conv);
  const body = { id: entry.id, text: entry.text };
  body[conversation.kind] = conversation.name;
  if (request("SEND", body, { id: entry.id }) === null) return;
  entry.sentAt = Date.now();
  setMessageState(entry, "sent");
}

function sendAnswered(code, body) {
  const entry = app.outbox.get(body.id);
  if (!entry) return;  // an answer to a resend of something already settled
  switch (code) {
    case 0:
      app.outbox.delete(entry.id);
      entry.element.dataset.seq = body.seq;
      entry.element.querySelector(".time").textContent = timeText(body.sentAtMs);
      return setMessageState(entry, "acked", `stored by the node as #${body.seq}; it delivers it to every recipient`);
    case 3:  // over the node's size limit: the same bytes would be refused again, by every path
      app.outbox.delete(entry.id);
      return setMessageState(entry, "failed", tooLargeText());
    case 8:
      return rateLimited(entry, Number(body.retryAfterMs) || 0);
    case 10:
    case 13:  // not stored this time: the ack timeout sends it again
      return undefined;
    default:
      app.outbox.delete(entry.id);
      return setMessageState(entry, "failed", STATUS[code] || `code ${code}`);
  }
}

/// SEND_ACK rateLimited: the node refuses every SEND on this connection until the wait is over, so
/// this message and every later one in flight go back to the queue, nothing is sent until then, and
/// then everything queued goes out in order (tick) — the order the node stores them in.
function rateLimited(entry, retryAfterMs) {
  if (entry.state !== "sent") return;  // put back already, by this pause
  const wait = Math.max(retryAfterMs, MIN_RATE_PAUSE_MS);
  const wasPaused = isPaused();
  app.pausedUntil = Math.max(app.pausedUntil || 0, Date.now() + wait);
  let later = false;
  for (const other of app.outbox.values()) {
    if (other === entry) later = true;
    if (later && other.state === "sent") setMessageState(other, "queued");
  }
  if (!wasPaused) notice(`rate limited, retrying in ${(wait / 1000).toFixed(1)} s`);
}

function setMessageState(entry, state, detail) {
  entry.state = state;
  const element = entry.element;
  element.dataset.state = state;
  const label = element.querySelector(".state");
  label.textContent = state === "failed" ? `failed: ${detail}` : state;
  label.title = detail || "";
}

// MARK: conversations

function conversationFor(kind, name) {
  const key = `${kind}:${name}`;
  let conversation = app.conversations.get(key);
  if (conversation) return conversation;
  const list = document.createElement("ul");
  list.dataset.conv = key;
  list.hidden = true;
  $("messages").append(list);
  conversation = { key, kind, name, list, oldest: null, more: false, loaded: false, unread: 0 };
  app.conversations.set(key, conversation);
  if (kind === "user") renderDirects();
  return conversation;
}

function open(conversation) {
  app.current = conversation.key;
  for (const other of app.conversations.values()) other.list.hidden = other !== conversation;
  conversation.unread = 0;
  $("title").textContent = conversation.kind === "room" ? `# ${conversation.name}` : `@ ${conversation.name}`;
  $("leave").hidden = conversation.kind !== "room";
  $("older").hidden = !conversation.more;
  renderRooms();
  renderDirects();
  setComposer();
  setDrawer(false);
  // Member counts follow the node's MEMBERSHIP notices; the list is read again for rooms made meanwhile.
  if (conversation.kind === "room" && app.online) request("LIST_ROOMS");
  if (!conversation.loaded && app.online) loadHistory(conversation, "latest");
  scrollDown(conversation);
}

function setComposer() {
  const usable = app.current !== null;
  $("text").disabled = !usable;
  $("send").disabled = !usable;
}

/// A message from the node (DELIVER or a history page): shown once per (sender, id).
function show(message, fromHistory = false) {
  const signature = `${message.from}\u0000${message.id}`;
  const conversation = message.room
    ? conversationFor("room", message.room)
    : conversationFor("user", message.from === app.user ? message.user : message.from);
  const seq = Number(message.seq || 0);
  if (conversation.oldest === null || seq < conversation.oldest) conversation.oldest = seq;
  if (app.seen.has(signature)) {
    // Our own message, seen again in history: it is settled at the node whatever this page knew.
    const own = conversation.list.querySelector(`li[data-id="${CSS.escape(message.id)}"]`);
    if (own && own.dataset.state !== "acked" && message.from === app.user) {
      const entry = app.outbox.get(message.id) || { element: own };
      app.outbox.delete(message.id);
      own.dataset.seq = message.seq;
      setMessageState(entry, "acked", `stored by the node as #${message.seq}`);
    }
    return;
  }
  app.seen.add(signature);
  const element = messageElement(message, conversation);
  element.dataset.seq = seq;
  if (message.from === app.user) {
    element.dataset.state = "acked";
    element.querySelector(".state").textContent = "acked";
  }
  const following = isShowingNewest();
  insertBySeq(conversation.list, element, seq);
  if (app.current !== conversation.key && !fromHistory) {
    conversation.unread += 1;
    renderRooms();
    renderDirects();
  } else if (!fromHistory) {
    follow(conversation, following);
  }
}

function messageElement(message, conversation) {
  const element = document.createElement("li");
  element.className = message.from === app.user ? "msg own" : "msg";
  element.dataset.conv = conversation.key;
  element.dataset.from = message.from;
  element.dataset.id = message.id;
  const parts = [["from", message.from], ["text", message.text || ""],
    ["time", timeText(message.sentAtMs)]];
  if (message.from === app.user) parts.push(["state", ""]);
  for (const [name, text] of parts) {
    const span = document.createElement("span");
    span.className = name;
    span.textContent = text;  // text, never HTML: nothing a sender writes can run here
    element.append(span);
  }
  return element;
}

function timeText(milliseconds) {
  return milliseconds ? new Date(Number(milliseconds)).toLocaleTimeString() : "";
}

/// Stored messages in seq order; own messages not yet stored stay at the end.
function insertBySeq(list, element, seq) {
  for (const other of list.children) {
    const otherSeq = other.dataset.seq === undefined ? Infinity : Number(other.dataset.seq);
    if (otherSeq > seq) return list.insertBefore(element, other);
  }
  return list.append(element);
}

/// Whether the message pane shows its end (give or take a few pixels): the view then follows what arrives.
function isShowingNewest() {
  const pane = $("messages");
  return pane.scrollHeight - pane.scrollTop - pane.clientHeight < 24;
}

function scrollDown(conversation) {
  if (app.current !== conversation.key) return;
  $("messages").scrollTop = $("messages").scrollHeight;
  $("new-messages").hidden = true;
}

/// After something new in the open conversation: down to it if the view was at the end; otherwise the
/// reader scrolled up to read, and is not moved: a marker says there is more below.
function follow(conversation, wasShowingNewest) {
  if (wasShowingNewest) scrollDown(conversation);
  else if (app.current === conversation.key) $("new-messages").hidden = false;
}

function loadHistory(conversation, which) {
  const body = { limit: HISTORY_PAGE };
  body[conversation.kind] = conversation.name;
  if (which === "older" && conversation.oldest) body.beforeSeq = String(conversation.oldest);
  request("HISTORY", body, { conv: conversation.key, which });
}

function historyAnswered(code, body, context) {
  if (!context) return;
  const conversation = app.conversations.get(context.conv);
  if (code !== 0) return notice(`history of ${conversation.name}: ${STATUS[code] || code}`);
  const following = isShowingNewest();
  for (const message of body.messages || []) show(message, true);
  // The newest page tells whether older ones exist only the first time; an "older" page always does.
  if (context.which === "older" || !conversation.loaded) conversation.more = body.moreAvailable === true;
  conversation.loaded = true;
  if (app.current === conversation.key) $("older").hidden = !conversation.more;
  if (context.which === "latest") follow(conversation, following);
}

// MARK: rooms and people

function roomAnswered(command, code, body, context) {
  if (code !== 0) return notice(`${command === "JOIN_ACK" ? "join" : "leave"} ${context ? context.room : ""}: ${STATUS[code] || code}`);
  // The answer's count is the newest: the list read after it may be on its way still.
  const answer = { name: body.name, members: Number(body.members || 0), joined: body.joined === true };
  const known = app.rooms.find((entry) => entry.name === body.name);
  if (known) Object.assign(known, answer);
  else app.rooms.push(answer);  // a new room: in place until the list comes, in order
  if (command === "JOIN_ACK") return open(conversationFor("room", body.name));  // open() lists the rooms
  request("LIST_ROOMS");
  notice(`left ${body.name}`);
}

function showRooms(rooms) {
  app.rooms = rooms;
  renderRooms();
}

/// Whether the room's last known count is over the node's large-room size (docs/PROTOCOL.md §8): the
/// node then sends no presence of its members and no joins or leaves, so their presence is unknown.
function isLarge(room) {
  return app.largeRoomMembers > 0 && Number(room.members || 0) > app.largeRoomMembers;
}

function countText(count) {
  return Number(count || 0).toLocaleString("en-US");
}

function renderRooms() {
  const list = $("rooms");
  list.replaceChildren();
  for (const room of app.rooms) {
    const conversation = app.conversations.get(`room:${room.name}`);
    const item = document.createElement("li");
    item.dataset.room = room.name;
    item.className = (room.joined ? "" : "not-joined") + (app.current === `room:${room.name}` ? " current" : "");
    item.textContent = `# ${room.name} (${countText(room.members)})`;
    item.title = room.joined ? "open" : "join";
    if (isLarge(room)) {
      item.dataset.large = "";
      item.title += ` — a large room: ${countText(room.members)} members, presence not shown`;
    }
    if (conversation && conversation.unread > 0) item.append(badge(conversation.unread));
    item.onclick = () => room.joined ? open(conversationFor("room", room.name)) : request("JOIN", { room: room.name }, { room: room.name });
    list.append(item);
  }
  renderRoomInfo();
}

/// Under the open room's name: its member count and, in a large room, that presence is not shown; by
/// the online list, the same warning, so nobody missing from it reads as offline.
function renderRoomInfo() {
  const conversation = app.conversations.get(app.current);
  const room = conversation && conversation.kind === "room" ? app.rooms.find((entry) => entry.name === conversation.name) : null;
  const info = $("room-info");
  const unknown = $("presence-unknown");
  info.hidden = !room;
  unknown.hidden = !room || !isLarge(room);
  if (!room) return;
  const count = Number(room.members || 0);
  const large = isLarge(room);
  info.dataset.large = String(large);
  info.textContent = `${countText(count)} member${count === 1 ? "" : "s"}${large ? " · presence not shown" : ""}`;
  info.title = large ? `more than ${countText(app.largeRoomMembers)} members: the node does not say who of them is online` : "";
  unknown.textContent = `presence of # ${room.name}'s members not shown: a large room`;
}

function renderDirects() {
  const list = $("directs");
  list.replaceChildren();
  for (const conversation of app.conversations.values()) {
    if (conversation.kind !== "user") continue;
    const item = document.createElement("li");
    item.dataset.user = conversation.name;
    item.className = app.current === conversation.key ? "current" : "";
    item.textContent = `@ ${conversation.name}${app.onlineUsers.has(conversation.name) ? " •" : ""}`;
    if (conversation.unread > 0) item.append(badge(conversation.unread));
    item.onclick = () => open(conversation);
    list.append(item);
  }
}

function badge(count) {
  const span = document.createElement("span");
  span.className = "unread";
  span.textContent = String(count);
  return span;
}

// A member of one of our rooms joined or left it (MEMBERSHIP, a state like PRESENCE): a line in the
// room's pane, and the room's member count as the node counts it now.
function membership(body) {
  const members = Number(body.members || 0);
  const room = app.rooms.find((entry) => entry.name === body.room);
  if (room) room.members = members;
  else request("LIST_ROOMS");  // a room this page has not listed yet
  const conversation = conversationFor("room", body.room);
  const following = isShowingNewest();
  const element = document.createElement("li");
  element.className = "event";
  element.textContent = `${body.user} ${body.joined ? "joined" : "left"} ${body.room} (${members} member${members === 1 ? "" : "s"})`;
  // After the newest stored message: later messages go below it, as they came after it.
  const newest = Math.max(0, ...[...conversation.list.children].map((other) => Number(other.dataset.seq || 0)));
  element.dataset.seq = newest;
  insertBySeq(conversation.list, element, newest);
  renderRooms();
  follow(conversation, following);
}

// Presence comes for contacts only (people who share a room or a conversation), as states: a
// snapshot after each login, changes after it. While disconnected the list is greyed (setConnection).
// A batch's notices are applied in order and the list drawn once, not once a notice.
function presence(notices) {
  for (const { user, online } of notices) {
    if (online === true) app.onlineUsers.add(user);
    else app.onlineUsers.delete(user);
  }
  renderOnline();
}

function renderOnline() {
  const list = $("online");
  list.replaceChildren();
  for (const name of [...app.onlineUsers].sort()) {
    const item = document.createElement("li");
    item.textContent = name;
    item.onclick = () => open(conversationFor("user", name));
    list.append(item);
  }
  renderDirects();
}

function notice(text) {
  $("notice").textContent = text;
}

/// The rooms drawer of the narrow layout (CSS ignores it on a wide one).
function setDrawer(open) {
  $("chat").classList.toggle("drawer-open", open);
  $("menu").setAttribute("aria-expanded", String(open));
}

// MARK: the page's controls

$("login-form").onsubmit = (event) => {
  event.preventDefault();
  app.user = $("user").value.trim();
  app.password = $("password").value;
  $("login-error").textContent = "";
  app.wantsConnection = true;
  app.attempts = 0;
  app.everOnline = false;
  app.restarting = false;
  connect();
};

$("conn").onclick = () => {
  // Waiting out the backoff helps nobody who can see the node is back.
  if (app.wantsConnection && app.ws === null && app.reconnectAt !== null) connect();
};

$("menu").onclick = () => setDrawer(!$("chat").classList.contains("drawer-open"));

$("messages").onscroll = () => {
  if (isShowingNewest()) $("new-messages").hidden = true;
};

$("new-messages").onclick = () => {
  const conversation = app.conversations.get(app.current);
  if (conversation) scrollDown(conversation);
};

$("logout").onclick = () => {
  app.wantsConnection = false;
  request("LOGOUT");  // the node answers and closes; no reconnect follows
  $("logout").hidden = true;
  setTimeout(() => location.reload(), 300);
};

$("join-form").onsubmit = (event) => {
  event.preventDefault();
  const room = $("room-name").value.trim();
  if (room) request("JOIN", { room }, { room });
  $("room-name").value = "";
};

$("leave").onclick = () => {
  const conversation = app.conversations.get(app.current);
  if (conversation && conversation.kind === "room") request("LEAVE", { room: conversation.name }, { room: conversation.name });
};

$("refresh-rooms").onclick = () => request("LIST_ROOMS");

$("dm-form").onsubmit = (event) => {
  event.preventDefault();
  const user = $("dm-user").value.trim();
  if (user) open(conversationFor("user", user));
  $("dm-user").value = "";
};

$("older").onclick = () => {
  const conversation = app.conversations.get(app.current);
  if (conversation) loadHistory(conversation, "older");
};

$("composer").onsubmit = (event) => {
  event.preventDefault();
  // A refused text stays in the field, to be shortened.
  if (submitMessage($("text").value)) $("text").value = "";
};

$("text").oninput = () => { $("composer-error").textContent = ""; };

setInterval(tick, 250);
