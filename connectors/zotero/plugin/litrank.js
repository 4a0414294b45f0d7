/*
 * litrank for Zotero 7–10: the plugin's logic, in one script.
 *
 * bootstrap.js loads this file with Services.scriptloader.loadSubScript into the plugin's
 * sandbox, where `Zotero`, `Services`, `ChromeUtils`, `setTimeout` and `clearTimeout` are
 * globals; the node tests (tests/plugin/) load the same file with `vm` over a fake of those
 * globals. It defines one global, `Litrank`.
 *
 * What it does: a "Recommend papers for this collection…" item in the collection context menu
 * (Zotero.MenuManager on Zotero 8 and later, a menuitem in #zotero-collectionmenu on Zotero 7)
 * asks for a candidate source and a number of picks, sends the collection's items and litrank's
 * own picks to `python -m recommender zotero-plugin answer` (contract version 1, see
 * docs/zotero-plugin.md) and applies the reply: new picks in a child collection ("Recommended"),
 * Extra lines updated, dropped picks taken out of that collection.
 *
 * Rules kept here whatever the reply says: only items tagged `litrank` are ever edited or taken
 * out of a collection; nothing is ever trashed or deleted; a reply that changes nothing writes
 * nothing.
 *
 * Length: about 1,000 lines on purpose. A bootstrapped Zotero plugin without a build step loads
 * plain scripts into one sandbox; one file keeps the menus (three Zotero shapes), the request,
 * the run of Python and the applying of the reply side by side, each in its own section below,
 * and lets the node tests load exactly what Zotero loads.
 */

/* global Zotero, Services, ChromeUtils, setTimeout, clearTimeout */

var Litrank = (function () {
	"use strict";

	const CONTRACT_VERSION = 1;
	const PREF_BRANCH = "extensions.litrank.";
	const TAG = "litrank";
	const FTL_FILE = "litrank.ftl";
	// Zotero 8+: the menu's id for Zotero.MenuManager (namespaced by Zotero with the plugin id).
	const MENU_ID = "recommend-for-collection";
	const MENU_TARGET = "main/library/collection";
	// Zotero 7: the id of the menuitem added to #zotero-collectionmenu.
	const MENUITEM_ID = "litrank-recommend-for-collection";
	const COLLECTION_MENU_ID = "zotero-collectionmenu";
	const ARGUMENTS = ["-m", "recommender", "zotero-plugin", "answer"];
	const DEFAULTS = { python: "python3", collectionName: "Recommended", top: 20, timeoutSeconds: 600 };
	// Seconds the progress window stays up after a run.
	const SUMMARY_MS = 12000;

	// English fallbacks for the Fluent messages of locale/en-US/litrank.ftl that the module
	// formats itself (alerts, prompts, progress). The tests check they match the .ftl file.
	const ENGLISH = {
		"litrank-dialog-title": "Recommend papers with litrank",
		"litrank-dialog-source": "Candidate papers for “{ $collection }”: a source such as openreview:ICML.cc/2026/Conference, arxiv:cs.LG, or the full path of a file or folder.",
		"litrank-dialog-top": "How many picks for “{ $collection }”? They go into { $path }.",
		"litrank-dialog-top-invalid": "“{ $value }” is not a number of picks: give a whole number, 1 or more.",
		"litrank-progress-running": "litrank is ranking { $source } for “{ $collection }”…",
		"litrank-progress-done": "litrank: { $picks } picks in { $path }",
		"litrank-progress-counts": "Written to Zotero: { $created } new, { $updated } updated, { $removed } taken out of the collection, { $unchanged } unchanged; { $skipped } skipped (not litrank's).",
		"litrank-progress-ignored": "{ $ignored } items named in litrank's answer were not found or are in the trash, and were left alone.",
		"litrank-error-title": "litrank",
		"litrank-error-no-collection": "Right-click a collection (not a library, a saved search or the trash) to get recommendations for it.",
		"litrank-error-busy": "litrank is already running for “{ $collection }”.",
		"litrank-error-python-missing": "The Python interpreter “{ $python }” was not found. Give its full path in Zotero's Settings → litrank (the preference extensions.litrank.python).",
		"litrank-error-timeout": "litrank did not answer within { $seconds } s. Raise the time limit in Zotero's Settings → litrank if your candidate source is large.",
		"litrank-error-failed": "litrank failed: { $message }",
		"litrank-error-exit": "litrank stopped with exit code { $code } and said nothing.",
		"litrank-error-not-json": "litrank's answer was not JSON.",
		"litrank-error-version": "litrank answered with contract version { $version }, and this plugin reads version 1: build the plugin again with the litrank you run (litrank zotero-plugin build).",
		"litrank-error-bad-reply": "litrank's answer could not be used: { $message }",
		"litrank-error-apply": "The picks could not all be written to Zotero: { $message }",
	};

	/** An error whose message is for the user: a Fluent id and its arguments. */
	class LitrankError extends Error {
		constructor(l10nID, args = {}) {
			super(english(l10nID, args));
			this.name = "LitrankError";
			this.l10nID = l10nID;
			this.l10nArgs = args;
		}
	}

	const state = {
		id: null,
		version: null,
		rootURI: null,
		menuKey: null, // what Zotero.MenuManager.registerMenu returned (Zotero 8+)
		windows: new Map(), // Zotero 7: window -> {menuitem, popup, onShowing}
		running: new Set(), // "<libraryID>/<collectionKey>" of runs under way
		lastRun: null, // the promise of the last run started from the Zotero 7 menuitem
	};

	// ------------------------------------------------------------------ strings

	function english(id, args = {}) {
		const text = ENGLISH[id] || id;
		return text.replace(/\{ \$([A-Za-z0-9_]+) \}/g, (whole, name) => (name in args ? String(args[name]) : whole));
	}

	/** The Fluent message `id` through the window's document.l10n (which has litrank.ftl), else the English fallback. */
	async function tr(window, id, args = {}) {
		try {
			const l10n = window && window.document && window.document.l10n;
			if (l10n && typeof l10n.formatValue === "function") {
				const text = await l10n.formatValue(id, args);
				if (typeof text === "string" && text && text !== id) {
					return text;
				}
			}
		}
		catch (e) {
			// Fall back to English below.
		}
		return english(id, args);
	}

	function firstLine(text) {
		return String(text || "").split(/\r?\n/).map(line => line.trim()).find(line => line) || "";
	}

	/** What stderr says in one line: its first line, or for a Python traceback its last (the exception). */
	function stderrLine(text) {
		const lines = String(text || "").split(/\r?\n/).map(line => line.trim()).filter(line => line);
		if (lines.some(line => line.startsWith("Traceback (most recent call last)"))) {
			return lines[lines.length - 1];
		}
		return lines[0] || "";
	}

	// ------------------------------------------------------------------ preferences

	function getPref(name) {
		let value;
		try {
			value = Zotero.Prefs.get(PREF_BRANCH + name, true);
		}
		catch (e) {
			value = undefined;
		}
		return value === undefined || value === null ? DEFAULTS[name] : value;
	}

	function setPref(name, value) {
		Zotero.Prefs.set(PREF_BRANCH + name, value, true);
	}

	function positiveInteger(value, fallback) {
		const number = typeof value === "number" ? value : Number(String(value).trim());
		return Number.isInteger(number) && number >= 1 ? number : fallback;
	}

	function settings() {
		const name = String(getPref("collectionName") || "").trim() || DEFAULTS.collectionName;
		return {
			python: String(getPref("python") || "").trim(),
			collectionName: name,
			top: positiveInteger(getPref("top"), DEFAULTS.top),
			timeoutSeconds: positiveInteger(getPref("timeoutSeconds"), DEFAULTS.timeoutSeconds),
		};
	}

	function sourceKey(collection) {
		return `${collection.libraryID}/${collection.key}`;
	}

	/** The candidate source last used for `collection` (pref extensions.litrank.sources, a JSON object). */
	function rememberedSource(collection) {
		try {
			const sources = JSON.parse(getPref("sources") || "{}");
			const value = sources && sources[sourceKey(collection)];
			return typeof value === "string" ? value : "";
		}
		catch (e) {
			return "";
		}
	}

	function rememberSource(collection, source) {
		let sources = {};
		try {
			sources = JSON.parse(getPref("sources") || "{}") || {};
		}
		catch (e) {
			sources = {};
		}
		if (typeof sources !== "object" || Array.isArray(sources)) {
			sources = {};
		}
		sources[sourceKey(collection)] = source;
		setPref("sources", JSON.stringify(sources));
	}

	// ------------------------------------------------------------------ items and collections

	function isLitrankItem(item) {
		const tags = typeof item.getTags === "function" ? item.getTags() : [];
		return tags.some(tag => String(tag.tag || "").toLowerCase() === TAG);
	}

	function isLitrankData(data) {
		return (data.tags || []).some(tag => String(tag.tag || "").toLowerCase() === TAG);
	}

	function byKey(a, b) {
		return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
	}

	/** A collection name as one part of a path: "/" written "\/", "\" written "\\" (as litrank reads paths). */
	function escapeName(name) {
		return String(name).replace(/\\/g, "\\\\").replace(/\//g, "\\/");
	}

	/** The names from the top-level collection down to `collection`, joined with "/". */
	function collectionPath(collection) {
		const names = [];
		let current = collection;
		for (let depth = 0; current && depth < 256; depth++) {
			names.unshift(escapeName(current.name));
			current = current.parentID ? Zotero.Collections.get(current.parentID) : null;
		}
		return names.join("/");
	}

	/** The child collection of `collection` named `name` (not in the trash), or null; the oldest when several. */
	function findRecommended(collection, name) {
		const children = collection.getChildCollections(false, false) || [];
		const matches = children.filter(child => child.name === name && !child.deleted);
		matches.sort((a, b) => a.id - b.id);
		return matches[0] || null;
	}

	/**
	 * The regular items of `collection` and its subcollections (the Recommended collection's
	 * subtree left out), not in the trash, not litrank's own, one per key, sorted by key.
	 */
	function libraryItems(collection, recommended) {
		const seen = new Map();
		const visited = new Set();
		const walk = (current) => {
			if (!current || visited.has(current.id) || (recommended && current.id === recommended.id)) {
				return;
			}
			visited.add(current.id);
			for (const item of current.getChildItems(false, false) || []) {
				if (!item.deleted && item.isRegularItem() && !isLitrankItem(item) && !seen.has(item.key)) {
					seen.set(item.key, item);
				}
			}
			for (const child of current.getChildCollections(false, false) || []) {
				walk(child);
			}
		};
		walk(collection);
		return [...seen.values()].sort(byKey);
	}

	/** Every regular item of the library tagged `litrank`, in the trash too, sorted by key. */
	async function litrankItems(libraryID) {
		const search = new Zotero.Search();
		search.libraryID = libraryID;
		// "contains" (SQL LIKE) also finds "Litrank"; the exact tag is checked below, so the
		// litrank:liked of a user's own item does not make it litrank's.
		search.addCondition("tag", "contains", TAG);
		search.addCondition("includeDeleted", "true");
		const ids = await search.search();
		const items = ids && ids.length ? await Zotero.Items.getAsync(ids) : [];
		return items.filter(item => item && item.isRegularItem() && isLitrankItem(item)).sort(byKey);
	}

	/**
	 * The request (contract version 1) for `collection`, and what applying its reply needs.
	 * @returns {Promise<{request: object, recommended: ?Zotero.Collection, path: string}>}
	 */
	async function buildRequest(collection, { source, top, collectionName }) {
		const recommended = findRecommended(collection, collectionName);
		const path = `${collectionPath(collection)}/${escapeName(collectionName)}`;
		const library = libraryItems(collection, recommended).map(item => item.toJSON());
		const picks = (await litrankItems(collection.libraryID)).map(item => item.toJSON());
		const request = {
			v: CONTRACT_VERSION,
			library,
			picks,
			candidates: { source },
			top,
			recommended: { key: recommended ? recommended.key : null, path },
		};
		return { request, recommended, path };
	}

	// ------------------------------------------------------------------ running litrank

	function loadSubprocess() {
		// Firefox 115 (Zotero 7) and later have the ES module; the .jsm is a fallback for builds
		// that lack it (Zotero 10 shims ChromeUtils.import onto importESModule anyway).
		try {
			return ChromeUtils.importESModule("resource://gre/modules/Subprocess.sys.mjs").Subprocess;
		}
		catch (e) {
			return ChromeUtils.import("resource://gre/modules/Subprocess.jsm").Subprocess;
		}
	}

	async function readAll(pipe) {
		if (!pipe) {
			return "";
		}
		let text = "";
		for (;;) {
			let chunk;
			try {
				chunk = await pipe.readString();
			}
			catch (e) {
				break; // the pipe closed under us (a killed process)
			}
			if (!chunk) {
				break;
			}
			text += chunk;
		}
		return text;
	}

	function parseReply(stdout) {
		const text = String(stdout || "").trim();
		if (!text) {
			return null;
		}
		try {
			return JSON.parse(text);
		}
		catch (e) {
			// One JSON object is the contract; tolerate something printed before it.
			const lines = text.split(/\r?\n/).filter(line => line.trim().startsWith("{"));
			try {
				return lines.length ? JSON.parse(lines[lines.length - 1]) : null;
			}
			catch (e2) {
				return null;
			}
		}
	}

	/**
	 * Run `<python> -m recommender zotero-plugin answer` with `request` on stdin (an argument
	 * array, never a shell) and return its reply; throws LitrankError with a message for the user.
	 */
	async function runLitrank(request, { python, timeoutSeconds }) {
		const Subprocess = loadSubprocess();
		if (!python) {
			throw new LitrankError("litrank-error-python-missing", { python: "" });
		}
		let command;
		try {
			command = await Subprocess.pathSearch(python);
		}
		catch (e) {
			command = null;
		}
		if (!command) {
			throw new LitrankError("litrank-error-python-missing", { python });
		}
		let proc;
		try {
			proc = await Subprocess.call({
				command,
				arguments: ARGUMENTS.slice(),
				// UTF-8 both ways whatever the system's code page (Windows pipes are not UTF-8 by default).
				environment: { PYTHONUTF8: "1", PYTHONIOENCODING: "utf-8" },
				environmentAppend: true,
				stdin: "pipe",
				stdout: "pipe",
				stderr: "pipe",
			});
		}
		catch (e) {
			if (e && e.errorCode === Subprocess.ERROR_BAD_EXECUTABLE) {
				throw new LitrankError("litrank-error-python-missing", { python });
			}
			throw new LitrankError("litrank-error-failed", { message: firstLine(e && e.message) || String(e) });
		}

		const TIMED_OUT = {};
		let timer = null;
		const timeout = new Promise((resolve) => {
			timer = setTimeout(() => resolve(TIMED_OUT), timeoutSeconds * 1000);
		});
		const work = (async () => {
			const stdout = readAll(proc.stdout);
			const stderr = readAll(proc.stderr);
			try {
				await proc.stdin.write(JSON.stringify(request));
			}
			catch (e) {
				// litrank stopped before reading everything; its stderr says why.
			}
			try {
				await proc.stdin.close();
			}
			catch (e) {
				// Already closed.
			}
			const [out, err] = await Promise.all([stdout, stderr]);
			const { exitCode } = await proc.wait();
			return { out, err, exitCode };
		})();
		work.catch(() => {});
		const result = await Promise.race([work, timeout]);
		clearTimeout(timer);
		if (result === TIMED_OUT) {
			try {
				await proc.kill();
			}
			catch (e) {
				// It may have ended meanwhile.
			}
			throw new LitrankError("litrank-error-timeout", { seconds: timeoutSeconds });
		}

		const reply = parseReply(result.out);
		const replyError = reply && typeof reply === "object" && reply.error;
		if (replyError) {
			const message = firstLine(typeof replyError === "object" ? replyError.message : replyError);
			throw new LitrankError("litrank-error-failed", { message: message || stderrLine(result.err) || String(result.exitCode) });
		}
		if (result.exitCode !== 0) {
			const said = stderrLine(result.err);
			if (said) {
				throw new LitrankError("litrank-error-failed", { message: said });
			}
			throw new LitrankError("litrank-error-exit", { code: result.exitCode });
		}
		if (!reply || typeof reply !== "object" || Array.isArray(reply)) {
			const said = stderrLine(result.err);
			if (said) {
				throw new LitrankError("litrank-error-failed", { message: said });
			}
			throw new LitrankError("litrank-error-not-json");
		}
		if (reply.v !== CONTRACT_VERSION) {
			throw new LitrankError("litrank-error-version", { version: String(reply.v) });
		}
		return reply;
	}

	// ------------------------------------------------------------------ applying the reply

	/** The reply's writes, checked before anything is written. */
	function checkedWrites(reply) {
		const list = (name) => {
			const value = reply[name] === undefined ? [] : reply[name];
			if (!Array.isArray(value)) {
				throw new LitrankError("litrank-error-bad-reply", { message: `'${name}' is not a list` });
			}
			return value;
		};
		const create = list("create");
		const update = list("update");
		const remove = list("remove");
		create.forEach((entry, index) => {
			if (!entry || typeof entry.data !== "object" || !entry.data || typeof entry.data.itemType !== "string") {
				throw new LitrankError("litrank-error-bad-reply", { message: `create[${index}] has no item data with an itemType` });
			}
		});
		for (const [name, entries] of [["update", update], ["remove", remove]]) {
			entries.forEach((entry, index) => {
				if (!entry || typeof entry.key !== "string" || typeof entry.extra !== "string") {
					throw new LitrankError("litrank-error-bad-reply", { message: `${name}[${index}] needs a key and an extra` });
				}
			});
		}
		return { create, update, remove };
	}

	/** Item data for a new pick: no key, version, collections or trash flag of its own, and the litrank tag. */
	function newItemData(data) {
		const clean = JSON.parse(JSON.stringify(data));
		for (const field of ["key", "version", "collections", "deleted", "parentItem", "dateAdded", "dateModified"]) {
			delete clean[field];
		}
		clean.tags = Array.isArray(clean.tags) ? clean.tags : [];
		if (!isLitrankData(clean)) {
			clean.tags.push({ tag: TAG });
		}
		return clean;
	}

	function normalTitle(text) {
		return String(text || "").trim().toLowerCase().replace(/\s+/g, " ");
	}

	/** A live litrank item already in `recommended` that is the same paper as `data` (a reply applied twice). */
	function alreadyThere(recommended, data) {
		if (!recommended) {
			return null;
		}
		const title = normalTitle(data.title);
		if (!title) {
			return null;
		}
		for (const item of recommended.getChildItems(false, false) || []) {
			if (item.deleted || !isLitrankItem(item) || normalTitle(item.getField("title")) !== title) {
				continue;
			}
			const sameIds = ["DOI", "url"].every((field) => {
				const mine = String(item.getField(field) || "").trim().toLowerCase();
				const theirs = String(data[field] || "").trim().toLowerCase();
				return !mine || !theirs || mine === theirs;
			});
			if (sameIds) {
				return item;
			}
		}
		return null;
	}

	/**
	 * Write `reply` into Zotero under `collection`.
	 *
	 * Each write is its own `saveTx()` (one transaction per item), not one
	 * Zotero.DB.executeTransaction around all of them: a run writes at most a few dozen items,
	 * each save is then a complete, valid change that Zotero's notifier shows at once, and a
	 * failure part-way leaves every item either written or untouched. Nothing is lost by
	 * stopping half-way, because litrank finds its picks again by identity on the next run
	 * (the same reply never creates a pick twice; see alreadyThere for a reply applied twice).
	 *
	 * @returns {Promise<object>} counts: created, updated, removed, unchanged, skipped (not
	 *   litrank's), ignored (not found or in the trash), createdCollection, recommended
	 */
	async function applyReply(reply, { collection, recommended, collectionName }) {
		const writes = checkedWrites(reply);
		const counts = { created: 0, updated: 0, removed: 0, unchanged: 0, skipped: 0, ignored: 0, createdCollection: false };
		const libraryID = collection.libraryID;
		let target = recommended || findRecommended(collection, collectionName);

		if (!target && (writes.create.length || writes.update.length)) {
			target = new Zotero.Collection({ name: collectionName, libraryID, parentID: collection.id });
			await target.saveTx({ skipSelect: true });
			counts.createdCollection = true;
		}

		for (const { data } of writes.create) {
			const clean = newItemData(data);
			if (alreadyThere(target, clean)) {
				counts.unchanged++;
				continue;
			}
			const item = new Zotero.Item(clean.itemType);
			item.libraryID = libraryID;
			item.fromJSON(clean);
			item.addToCollection(target.id);
			await item.saveTx({ skipSelect: true });
			counts.created++;
		}

		for (const [kind, entries] of [["update", writes.update], ["remove", writes.remove]]) {
			for (const { key, extra } of entries) {
				const item = Zotero.Items.getByLibraryAndKey(libraryID, key);
				if (!item || item.deleted) {
					counts.ignored++;
					continue;
				}
				if (!item.isRegularItem() || !isLitrankItem(item)) {
					counts.skipped++; // never touch an item litrank did not create
					continue;
				}
				let changed = false;
				if (String(item.getField("extra") || "") !== extra) {
					item.setField("extra", extra);
					changed = true;
				}
				if (kind === "update" && !item.inCollection(target.id)) {
					item.addToCollection(target.id);
					changed = true;
				}
				if (kind === "remove" && target && item.inCollection(target.id)) {
					item.removeFromCollection(target.id);
					changed = true;
				}
				if (!changed) {
					counts.unchanged++;
					continue;
				}
				await item.saveTx({ skipSelect: true });
				counts[kind === "update" ? "updated" : "removed"]++;
			}
		}
		counts.recommended = target;
		return counts;
	}

	// ------------------------------------------------------------------ the whole flow

	function alert(window, title, message) {
		if (typeof Zotero.alert === "function") {
			Zotero.alert(window, title, message);
		}
		else {
			Services.prompt.alert(window, title, message);
		}
	}

	async function showError(window, error) {
		const title = await tr(window, "litrank-error-title");
		let message;
		if (error instanceof LitrankError || (error && error.name === "LitrankError" && error.l10nID)) {
			message = await tr(window, error.l10nID, error.l10nArgs);
		}
		else {
			try {
				Zotero.logError(error);
			}
			catch (e) {
				// Logging is best effort.
			}
			message = await tr(window, "litrank-error-failed", { message: firstLine(error && error.message) || String(error) });
		}
		alert(window, title, message);
		return message;
	}

	/** Ask for the source and the number of picks; null when the user cancels. */
	async function askUser(window, collection, path) {
		const title = await tr(window, "litrank-dialog-title");
		const source = { value: rememberedSource(collection) };
		const sourceText = await tr(window, "litrank-dialog-source", { collection: collection.name });
		if (!Services.prompt.prompt(window, title, sourceText, source, null, { value: false })) {
			return null;
		}
		const chosen = String(source.value || "").trim();
		if (!chosen) {
			return null;
		}
		const top = { value: String(settings().top) };
		const topText = await tr(window, "litrank-dialog-top", { collection: collection.name, path });
		if (!Services.prompt.prompt(window, title, topText, top, null, { value: false })) {
			return null;
		}
		const count = positiveInteger(top.value, null);
		if (count === null) {
			alert(window, title, await tr(window, "litrank-dialog-top-invalid", { value: String(top.value) }));
			return null;
		}
		return { source: chosen, top: count };
	}

	/**
	 * "Recommend papers for this collection…": ask, run litrank, apply, report.
	 * @returns {Promise<?object>} the counts of applyReply, or null (cancelled or failed)
	 */
	async function recommend(window, collection) {
		window = window || Zotero.getMainWindow();
		if (!collection) {
			await showError(window, new LitrankError("litrank-error-no-collection"));
			return null;
		}
		const key = sourceKey(collection);
		if (state.running.has(key)) {
			await showError(window, new LitrankError("litrank-error-busy", { collection: collection.name }));
			return null;
		}
		const config = settings();
		const path = `${collectionPath(collection)}/${escapeName(config.collectionName)}`;
		const asked = await askUser(window, collection, path);
		if (!asked) {
			return null;
		}
		rememberSource(collection, asked.source);

		state.running.add(key);
		let progress = null;
		try {
			progress = new Zotero.ProgressWindow({ closeOnClick: true, window });
			progress.changeHeadline(await tr(window, "litrank-progress-running", { source: asked.source, collection: collection.name }));
			progress.show();

			const built = await buildRequest(collection, { source: asked.source, top: asked.top, collectionName: config.collectionName });
			const reply = await runLitrank(built.request, config);
			let counts;
			try {
				counts = await applyReply(reply, { collection, recommended: built.recommended, collectionName: config.collectionName });
			}
			catch (e) {
				if (e instanceof LitrankError) {
					throw e;
				}
				try {
					Zotero.logError(e);
				}
				catch (e2) {
					// Logging is best effort.
				}
				throw new LitrankError("litrank-error-apply", { message: firstLine(e && e.message) || String(e) });
			}

			// A new window for the summary: the user may have clicked the first one away.
			progress.close();
			progress = null;
			const summary = new Zotero.ProgressWindow({ closeOnClick: true, window });
			const picks = Array.isArray(reply.picks) ? reply.picks.length : counts.created + counts.updated;
			summary.changeHeadline(await tr(window, "litrank-progress-done", { picks, path: built.path }));
			if (reply.summary) {
				summary.addDescription(String(reply.summary));
			}
			// Fluent arguments must be strings or numbers: only the counts.
			const numbers = {};
			for (const name of ["created", "updated", "removed", "unchanged", "skipped", "ignored"]) {
				numbers[name] = counts[name];
			}
			summary.addDescription(await tr(window, "litrank-progress-counts", numbers));
			if (counts.ignored) {
				summary.addDescription(await tr(window, "litrank-progress-ignored", numbers));
			}
			summary.show();
			summary.startCloseTimer(SUMMARY_MS);
			return counts;
		}
		catch (e) {
			if (progress) {
				try {
					progress.close();
				}
				catch (e2) {
					// Already closed.
				}
			}
			await showError(window, e);
			return null;
		}
		finally {
			state.running.delete(key);
		}
	}

	// ------------------------------------------------------------------ which collection

	function isCollection(value) {
		return !!value && typeof value.getChildCollections === "function" && typeof value.getChildItems === "function";
	}

	function collectionOfRow(row) {
		if (!row) {
			return null;
		}
		try {
			if (typeof row.isCollection === "function" && !row.isCollection()) {
				return null;
			}
		}
		catch (e) {
			return null;
		}
		return isCollection(row.ref) ? row.ref : null;
	}

	/** The tree row of a MenuManager context: collectionTreeRows[0] (Zotero 10), else collectionTreeRow (8–9). */
	function rowOfContext(context) {
		if (!context) {
			return { found: false, row: null };
		}
		let rows;
		try {
			rows = context.collectionTreeRows;
		}
		catch (e) {
			rows = undefined;
		}
		if (rows && typeof rows.length === "number") {
			return { found: true, row: rows[0] || null };
		}
		try {
			// Zotero 10 defines this as a getter that throws; only 8–9 have it.
			const row = context.collectionTreeRow;
			if (row !== undefined) {
				return { found: true, row: row || null };
			}
		}
		catch (e) {
			// Zotero 10: fall through.
		}
		return { found: false, row: null };
	}

	/** The selected collection from ZoteroPane: getSelectedCollection() (7–9; throws in 10), else getSelectedCollections()[0]. */
	function selectedCollection(window) {
		const pane = (window && window.ZoteroPane) || (typeof Zotero.getActiveZoteroPane === "function" ? Zotero.getActiveZoteroPane() : null);
		if (!pane) {
			return null;
		}
		try {
			if (typeof pane.getSelectedCollection === "function") {
				const collection = pane.getSelectedCollection();
				if (isCollection(collection)) {
					return collection;
				}
			}
		}
		catch (e) {
			// Zotero 10 removed it (it throws): use getSelectedCollections below.
		}
		try {
			if (typeof pane.getSelectedCollections === "function") {
				const collections = pane.getSelectedCollections() || [];
				return isCollection(collections[0]) ? collections[0] : null;
			}
		}
		catch (e) {
			// Nothing selected.
		}
		return null;
	}

	/** The right-clicked collection: from the menu's context when it has a row, else the selection. */
	function collectionFromContext(context, window) {
		const { found, row } = rowOfContext(context);
		if (found) {
			return collectionOfRow(row);
		}
		return selectedCollection(window);
	}

	function windowOf(event, context) {
		const fromEvent = event && event.target && (event.target.ownerGlobal || (event.target.ownerDocument && event.target.ownerDocument.defaultView));
		if (fromEvent) {
			return fromEvent;
		}
		try {
			const element = context && context.menuElem;
			if (element && element.ownerGlobal) {
				return element.ownerGlobal;
			}
		}
		catch (e) {
			// No menu element.
		}
		return Zotero.getMainWindow();
	}

	// ------------------------------------------------------------------ menus and windows

	function hasMenuManager() {
		return !!(Zotero.MenuManager && typeof Zotero.MenuManager.registerMenu === "function");
	}

	/** Zotero 8 and later: one menu for the collection context menu of every main window. */
	function registerMenu() {
		if (state.menuKey || !hasMenuManager()) {
			return state.menuKey;
		}
		const key = Zotero.MenuManager.registerMenu({
			menuID: MENU_ID,
			pluginID: state.id,
			target: MENU_TARGET,
			menus: [{
				menuType: "menuitem",
				l10nID: "litrank-menu-recommend",
				onShowing: (event, context) => {
					const window = windowOf(event, context);
					context.setVisible(!!collectionFromContext(context, window));
				},
				onCommand: (event, context) => {
					const window = windowOf(event, context);
					return recommend(window, collectionFromContext(context, window));
				},
			}],
		});
		if (!key) {
			Zotero.debug("litrank: Zotero.MenuManager.registerMenu refused the menu");
		}
		state.menuKey = key || null;
		return state.menuKey;
	}

	function unregisterMenu() {
		if (state.menuKey && hasMenuManager()) {
			Zotero.MenuManager.unregisterMenu(state.menuKey);
		}
		state.menuKey = null;
	}

	/** Zotero 7: a menuitem at the end of #zotero-collectionmenu, shown for collections only. */
	function addMenuItem(window) {
		const doc = window.document;
		const popup = doc.getElementById(COLLECTION_MENU_ID);
		if (!popup || doc.getElementById(MENUITEM_ID)) {
			return;
		}
		const menuitem = doc.createXULElement("menuitem");
		menuitem.id = MENUITEM_ID;
		menuitem.setAttribute("data-l10n-id", "litrank-menu-recommend");
		menuitem.addEventListener("command", (event) => {
			// Zotero 7's own handler on the popup (onCollectionContextMenuSelect) fails on menuitems it does not know.
			event.stopPropagation();
			state.lastRun = recommend(window, selectedCollection(window));
		});
		const onShowing = (event) => {
			if (event && event.target !== popup) {
				return;
			}
			let row = null;
			try {
				row = window.ZoteroPane && window.ZoteroPane.getCollectionTreeRow ? window.ZoteroPane.getCollectionTreeRow() : null;
			}
			catch (e) {
				row = null;
			}
			menuitem.hidden = row ? !collectionOfRow(row) : !selectedCollection(window);
		};
		popup.addEventListener("popupshowing", onShowing);
		// At the end: buildCollectionContextMenu addresses Zotero's own items by position.
		popup.appendChild(menuitem);
		state.windows.set(window, { menuitem, popup, onShowing });
	}

	function removeMenuItem(window) {
		const added = state.windows.get(window);
		if (added) {
			added.popup.removeEventListener("popupshowing", added.onShowing);
			added.menuitem.remove();
			state.windows.delete(window);
		}
		const left = window.document.getElementById(MENUITEM_ID);
		if (left) {
			left.remove();
		}
	}

	function addToWindow(window) {
		if (!window || !window.document) {
			return;
		}
		if (window.MozXULElement && typeof window.MozXULElement.insertFTLIfNeeded === "function") {
			window.MozXULElement.insertFTLIfNeeded(FTL_FILE);
		}
		if (!hasMenuManager()) {
			addMenuItem(window);
		}
	}

	function removeFromWindow(window) {
		if (!window || !window.document) {
			return;
		}
		removeMenuItem(window);
		const link = window.document.querySelector(`[href="${FTL_FILE}"]`);
		if (link) {
			link.remove();
		}
	}

	function mainWindows() {
		return (Zotero.getMainWindows() || []).filter(window => window && window.ZoteroPane);
	}

	function init({ id, version, rootURI }) {
		state.id = id;
		state.version = version;
		state.rootURI = rootURI;
	}

	/** After init: the menu (Zotero 8+) and every open main window. */
	function startup() {
		registerMenu();
		for (const window of mainWindows()) {
			addToWindow(window);
		}
	}

	function shutdown() {
		unregisterMenu();
		for (const window of [...state.windows.keys()]) {
			removeFromWindow(window);
		}
		for (const window of mainWindows()) {
			removeFromWindow(window);
		}
	}

	return {
		CONTRACT_VERSION,
		ARGUMENTS,
		MENU_ID,
		MENU_TARGET,
		MENUITEM_ID,
		ENGLISH,
		LitrankError,
		state,
		init,
		startup,
		shutdown,
		addToWindow,
		removeFromWindow,
		settings,
		rememberedSource,
		rememberSource,
		collectionPath,
		findRecommended,
		libraryItems,
		litrankItems,
		buildRequest,
		runLitrank,
		applyReply,
		recommend,
		collectionFromContext,
		english,
	};
})();

if (typeof module !== "undefined" && module.exports) {
	module.exports = Litrank;
}
