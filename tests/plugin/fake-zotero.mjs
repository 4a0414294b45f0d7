/**
 * A fake of the parts of Zotero 7–10 (and of Firefox's Subprocess) that the litrank plugin
 * uses, recording what the plugin does, for the node tests in this folder.
 *
 * Length: about 1,000 lines, one fake per Zotero object the plugin touches, kept in one module
 * so that every test builds the same world.
 *
 * Built from Zotero's own source (zotero/zotero, branches 7.0 to 10.0), not from guesses:
 *
 * - Items (chrome/content/zotero/xpcom/data/item.js): `toJSON()` gives the Web API's `data`
 *   object (`collections` as keys, `deleted: true` only for an item in the trash);
 *   `fromJSON()` ignores key/version/collections-handling as Zotero does (it calls
 *   `setCollections(json.collections)` when the JSON has collections);
 *   `addToCollection`/`removeFromCollection` take an id or a key; `saveTx()` gives a new item
 *   its key.
 * - Collections (collection.js): `getChildCollections(asIDs, includeTrashed)` and
 *   `getChildItems(asIDs, includeTrashed)` leave out trashed ones by default;
 *   `new Zotero.Collection({ name, libraryID, parentID })` then `saveTx()`.
 * - `Zotero.Search` (search.js, searchConditions.js): the conditions the plugin uses (`tag`
 *   is/contains, `includeDeleted`, `deleted`); any other condition throws, so that the plugin
 *   cannot rely on one this fake does not model.
 * - `Zotero.MenuManager` (xpcom/pluginAPI/menuManager.js, Zotero 8 and later; absent in 7):
 *   `registerMenu` checks the target and menus as Zotero does and returns the namespaced key
 *   "<pluginID>-<menuID>"; `unregisterMenu(key)`. The context given to `onShowing`/`onCommand`
 *   is Zotero's (zoteroPane.js, buildCollectionContextMenu): `collectionTreeRow` in 8 and 9;
 *   in 10 `collectionTreeRows` and a `collectionTreeRow` getter that throws, its property
 *   descriptors copied as Zotero 10's menuManager.js copies them.
 * - `ZoteroPane`: `getSelectedCollection()` and `getCollectionTreeRow()` (7–9) throw in 10,
 *   which has `getSelectedCollections()` and `getCollectionTreeRows()` instead.
 * - Zotero 7's main window: `#zotero-collectionmenu` with Zotero's own `command` handler on
 *   the popup (`onCollectionContextMenuSelect`, which in 7.0 fails on a menuitem it does not
 *   know: an error the fake records), `MozXULElement.insertFTLIfNeeded`.
 * - `Subprocess` (Firefox's toolkit/modules/subprocess): `pathSearch` rejects with
 *   `errorCode = ERROR_BAD_EXECUTABLE` when the command is not found; a process has
 *   `stdin.write/close`, `stdout/stderr.readString()` ("" at the end), `wait()` and `kill()`.
 *
 * Entry point: `makeEnvironment(options)` builds one fake Zotero (a library from a fixture such
 * as tests/data/zotero-plugin/items.json), its windows and a fake Subprocess, and
 * `env.loadPlugin()` runs connectors/zotero/plugin/litrank.js in a `vm` context whose globals
 * are those fakes (the globals Zotero gives a plugin's sandbox), returning its `Litrank`.
 * `env.loadBootstrap()` does the same for bootstrap.js, whose `loadSubScript` loads litrank.js
 * into the same context. Everything the plugin does is in `env.alerts`, `env.prompts`,
 * `env.progressWindows`, `env.writes`, `env.menus`, `env.subprocess.calls`, `env.errors`
 * (Zotero.logError) and `env.l10nErrors` (Fluent arguments Firefox would refuse).
 */
import fs from "node:fs";
import path from "node:path";
import vm from "node:vm";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(here, "..", "..");
export const PLUGIN_DIR = path.join(REPO, "connectors", "zotero", "plugin");
export const FIXTURES = path.join(REPO, "tests", "data", "zotero-plugin");
export const ROOT_URI = "jar:file:///fake/litrank.xpi!/";
export const PLUGIN_ID = "litrank@litrank.invalid";

export function readFixture(name) {
	return JSON.parse(fs.readFileSync(path.join(FIXTURES, name), "utf8"));
}

/** A plain copy (also turns objects made inside the vm context into this realm's objects). */
export function plain(value) {
	return JSON.parse(JSON.stringify(value));
}

// ---------------------------------------------------------------------------- a tiny DOM

class FakeEvent {
	constructor(type, target, extra = {}) {
		this.type = type;
		this.target = target;
		this.currentTarget = null;
		this.propagationStopped = false;
		Object.assign(this, extra);
	}

	stopPropagation() {
		this.propagationStopped = true;
	}
}

export class FakeElement {
	constructor(doc, tagName, attributes = {}) {
		this.ownerDocument = doc;
		this.tagName = tagName;
		this.attributes = { ...attributes };
		this.children = [];
		this.parentNode = null;
		this.listeners = [];
		this.hidden = false;
		this.dataset = {};
	}

	get ownerGlobal() {
		return this.ownerDocument.defaultView;
	}

	get id() {
		return this.attributes.id || "";
	}

	set id(value) {
		this.attributes.id = value;
	}

	setAttribute(name, value) {
		this.attributes[name] = String(value);
	}

	getAttribute(name) {
		return name in this.attributes ? this.attributes[name] : null;
	}

	appendChild(child) {
		if (child.parentNode) {
			child.remove();
		}
		child.parentNode = this;
		this.children.push(child);
		return child;
	}

	remove() {
		if (this.parentNode) {
			this.parentNode.children = this.parentNode.children.filter(child => child !== this);
			this.parentNode = null;
		}
	}

	addEventListener(type, listener) {
		this.listeners.push({ type, listener });
	}

	removeEventListener(type, listener) {
		this.listeners = this.listeners.filter(entry => !(entry.type === type && entry.listener === listener));
	}

	/** Runs the listeners of the target, then bubbles up unless stopped; errors are recorded, as a browser reports them. */
	dispatchEvent(event) {
		for (let node = this; node && !event.propagationStopped; node = node.parentNode) {
			event.currentTarget = node;
			for (const { type, listener } of node.listeners.slice()) {
				if (type !== event.type) {
					continue;
				}
				try {
					listener(event);
				}
				catch (error) {
					this.ownerDocument.errors.push(error);
				}
			}
		}
		return event;
	}

	*walk() {
		yield this;
		for (const child of this.children) {
			yield* child.walk();
		}
	}
}

class FakeDocument {
	constructor(window) {
		this.defaultView = window;
		this.errors = [];
		this.documentElement = new FakeElement(this, "window", { id: "main-window" });
		this.head = this.documentElement.appendChild(new FakeElement(this, "linkset"));
	}

	createXULElement(tagName) {
		return new FakeElement(this, tagName);
	}

	createElement(tagName) {
		return new FakeElement(this, tagName);
	}

	getElementById(id) {
		for (const element of this.documentElement.walk()) {
			if (element.id === id) {
				return element;
			}
		}
		return null;
	}

	/** Supports `#id` and `[attr="value"]`, what the plugin uses. */
	querySelector(selector) {
		let match = /^#(.+)$/.exec(selector);
		if (match) {
			return this.getElementById(match[1]);
		}
		match = /^\[([\w-]+)="(.*)"\]$/.exec(selector);
		if (match) {
			for (const element of this.documentElement.walk()) {
				if (element.getAttribute(match[1]) === match[2]) {
					return element;
				}
			}
			return null;
		}
		throw new Error(`fake querySelector does not support ${selector}`);
	}
}

// ---------------------------------------------------------------------------- Fluent

/** The messages of an .ftl file: id -> {value, attributes}. Enough of Fluent for litrank.ftl. */
export function parseFTL(text) {
	const messages = {};
	let current = null;
	for (const line of text.split("\n")) {
		if (!line.trim() || line.startsWith("#")) {
			continue;
		}
		let match = /^([a-zA-Z][\w-]*) =(?: (.*))?$/.exec(line);
		if (match) {
			current = { value: match[2] === undefined ? null : match[2], attributes: {} };
			messages[match[1]] = current;
			continue;
		}
		match = /^\s+\.([\w-]+) = (.*)$/.exec(line);
		if (match && current) {
			current.attributes[match[1]] = match[2];
			continue;
		}
		throw new Error(`unexpected line in .ftl: ${line}`);
	}
	return messages;
}

export function formatFluent(pattern, args = {}) {
	return pattern.replace(/\{ \$(\w+) \}/g, (whole, name) => (name in args ? String(args[name]) : whole));
}

/**
 * A document.l10n over the plugin's own litrank.ftl, once the window inserted it. Like Firefox's
 * (whose arguments are a WebIDL record of strings and numbers), it rejects other argument
 * values; those rejections are also recorded in `errors`.
 */
function fakeL10n(document, errors) {
	const messages = parseFTL(fs.readFileSync(path.join(PLUGIN_DIR, "locale", "en-US", "litrank.ftl"), "utf8"));
	return {
		async formatValue(id, args) {
			for (const [name, value] of Object.entries(args || {})) {
				if (typeof value !== "string" && typeof value !== "number") {
					const error = new TypeError(`l10n argument '${name}' of ${id} is a ${typeof value}, not a string or a number`);
					errors.push(error);
					throw error;
				}
			}
			if (!document.querySelector('[href="litrank.ftl"]')) {
				return undefined; // not loaded into this window
			}
			const message = messages[id];
			return message && message.value !== null ? formatFluent(message.value, args) : undefined;
		},
	};
}

// ---------------------------------------------------------------------------- the environment

const VALID_TARGETS = [
	"main/menubar/file", "main/menubar/edit", "main/menubar/view", "main/menubar/go", "main/menubar/tools",
	"main/menubar/help", "main/library/item", "main/library/collection", "main/library/addAttachment",
	"main/library/addNote", "main/tab", "reader/menubar/file", "reader/menubar/edit", "reader/menubar/view",
	"reader/menubar/go", "reader/menubar/window", "itemPane/info/row", "notesPane/addItemNote",
	"notesPane/addStandaloneNote", "sidenav/locate",
];

/**
 * One fake Zotero.
 * @param {object} options
 * @param {number} [options.version=7] 7 (no MenuManager), 8, 9 or 10 (collectionTreeRows)
 * @param {object} [options.library] a fixture like items.json: {libraryID, collections, items}
 * @param {object} [options.subprocess] options for fakeSubprocess
 * @param {Array} [options.answers] what the user types in the prompts, in order: a string
 *   (OK with that text) or null (Cancel)
 * @param {object} [options.prefs] preferences set by the user (full names)
 * @param {boolean} [options.esm=true] whether Subprocess.sys.mjs exists (else only Subprocess.jsm)
 * @param {number} [options.timeScale=0.001] real milliseconds per requested millisecond of setTimeout
 */
/**
 * The usual start of a test: a Zotero 8-shaped environment with items.json, a main window, the
 * plugin loaded and started; the dialog answers "examples/icml2026" and "5", and litrank
 * replies with reply.json. ``options`` override any of that (see makeEnvironment).
 */
export function startPlugin(options = {}) {
	const env = makeEnvironment({ answers: ["examples/icml2026", "5"], subprocess: { reply: readFixture("reply.json") }, ...options });
	const window = env.openWindow();
	const Litrank = env.loadPlugin();
	Litrank.startup();
	return { env, window, Litrank };
}

export function makeEnvironment(options = {}) {
	const version = options.version || 7;
	const library = options.library || readFixture("items.json");
	const env = {
		version,
		alerts: [],
		prompts: [],
		answers: [...(options.answers || [])],
		progressWindows: [],
		writes: [],
		errors: [],
		l10nErrors: [],
		debug: [],
		panes: [],
		timers: [],
		menus: new Map(),
		windows: [],
	};
	const libraryID = library.libraryID;

	// ------------------------------------------------------------ prefs (defaults from prefs.js)
	const prefs = new Map();
	vm.runInNewContext(fs.readFileSync(path.join(PLUGIN_DIR, "prefs.js"), "utf8"), {
		pref: (name, value) => prefs.set(name, value),
	});
	env.defaultPrefs = new Map(prefs);
	for (const [name, value] of Object.entries(options.prefs || {})) {
		prefs.set(name, value);
	}
	env.prefs = prefs;

	// ------------------------------------------------------------ collections and items
	const collections = new Map(); // id -> FakeCollection
	const items = new Map(); // id -> FakeItem
	let nextCollectionID = 1000;
	let nextItemID = 5000;
	let nextKey = 1;
	const newKey = (prefix) => `${prefix}${String(nextKey++).padStart(8 - prefix.length, "2")}`;

	const collectionByKey = key => [...collections.values()].find(collection => collection.key === key) || null;
	const toCollectionID = (idOrKey) => {
		if (typeof idOrKey === "number") {
			return collections.has(idOrKey) ? idOrKey : null;
		}
		const collection = collectionByKey(idOrKey);
		return collection ? collection.id : null;
	};

	class FakeCollection {
		constructor(params = {}) {
			this.id = null;
			this.key = null;
			this.name = params.name ?? null;
			this.libraryID = params.libraryID ?? null;
			this.parentID = params.parentID ?? false;
			if (params.parentKey) {
				this.parentID = collectionByKey(params.parentKey).id;
			}
			this.deleted = false;
		}

		getChildCollections(asIDs, includeTrashed) {
			const children = [...collections.values()].filter(c => c.parentID === this.id && (includeTrashed || !c.deleted));
			return asIDs ? children.map(c => c.id) : children;
		}

		getChildItems(asIDs, includeTrashed) {
			const children = [...items.values()].filter(item => item._collections.includes(this.id) && (includeTrashed || !item.deleted));
			return asIDs ? children.map(item => item.id) : children;
		}

		async saveTx(saveOptions = {}) {
			if (!this.name) {
				throw new Error("Collection name is empty");
			}
			const action = this.id ? "modify" : "add";
			if (!this.id) {
				this.id = nextCollectionID++;
				this.key = newKey("COL");
				collections.set(this.id, this);
			}
			env.writes.push({ type: "collection", action, key: this.key, name: this.name, parentID: this.parentID, options: saveOptions });
			return this.id;
		}
	}

	class FakeItem {
		constructor(itemType) {
			this.id = null;
			this.key = null;
			this.version = 0;
			this.libraryID = null;
			this.deleted = false;
			this._collections = [];
			this._json = { itemType, creators: [], tags: [], relations: {} };
		}

		get itemType() {
			return this._json.itemType;
		}

		isRegularItem() {
			return !["note", "attachment", "annotation"].includes(this._json.itemType);
		}

		getField(field) {
			const value = this._json[field];
			return value === undefined || value === null ? "" : value;
		}

		setField(field, value) {
			this._json[field] = value;
		}

		getTags() {
			return plain(this._json.tags || []);
		}

		hasTag(name) {
			return (this._json.tags || []).some(tag => tag.tag === name);
		}

		getCollections() {
			return this._collections.slice();
		}

		inCollection(collectionID) {
			return this._collections.includes(collectionID);
		}

		setCollections(idsOrKeys = []) {
			this._collections = [...new Set(idsOrKeys.map((value) => {
				const id = toCollectionID(value);
				if (!id) {
					throw new Error(`Collection ${value} not found for item ${this.key}`);
				}
				return id;
			}))];
		}

		addToCollection(idOrKey) {
			const id = toCollectionID(idOrKey);
			if (!id) {
				throw new Error(`Invalid collection '${idOrKey}'`);
			}
			if (!this._collections.includes(id)) {
				this._collections.push(id);
			}
		}

		removeFromCollection(idOrKey) {
			const id = toCollectionID(idOrKey);
			if (!id) {
				throw new Error(`Invalid collection '${idOrKey}'`);
			}
			this._collections = this._collections.filter(value => value !== id);
		}

		toJSON() {
			const json = { key: this.key, version: this.version, ...plain(this._json) };
			json.collections = this._collections.map(id => collections.get(id).key);
			if (this.deleted) {
				json.deleted = true;
			}
			return json;
		}

		fromJSON(json) {
			if (!json.itemType && !this._json.itemType) {
				throw new Error("itemType property not provided");
			}
			for (const [field, value] of Object.entries(json)) {
				if (["key", "version", "collections", "deleted", "parentItem", "inPublications"].includes(field)) {
					continue;
				}
				this._json[field] = plain(value);
			}
			if (json.collections || this._collections.length) {
				this.setCollections(json.collections || []);
			}
			if (json.deleted || this.deleted) {
				this.deleted = !!json.deleted;
			}
		}

		async saveTx(saveOptions = {}) {
			const action = this.id ? "modify" : "add";
			if (!this.id) {
				this.id = nextItemID++;
				this.key = newKey("NEW");
				this.libraryID = this.libraryID || libraryID;
				items.set(this.id, this);
			}
			this.version++;
			env.writes.push({ type: "item", action, key: this.key, data: this.toJSON(), options: saveOptions });
			return this.id;
		}
	}

	for (const entry of library.collections) {
		const collection = new FakeCollection({ name: entry.name, libraryID, parentKey: entry.parentKey });
		collection.id = entry.id;
		collection.key = entry.key;
		collection.deleted = !!entry.deleted;
		collections.set(collection.id, collection);
	}
	library.items.forEach((data, index) => {
		const item = new FakeItem(data.itemType);
		item.id = index + 1;
		item.key = data.key;
		item.version = data.version;
		item.libraryID = libraryID;
		item.deleted = !!data.deleted;
		item._json = plain(data);
		for (const field of ["key", "version", "collections", "deleted"]) {
			delete item._json[field];
		}
		item._collections = (data.collections || []).map(key => collectionByKey(key).id);
		items.set(item.id, item);
	});
	env.collections = collections;
	env.items = items;
	env.collection = name => [...collections.values()].find(collection => collection.name === name && !collection.deleted);
	env.item = key => [...items.values()].find(item => item.key === key);

	class FakeSearch {
		constructor(params = {}) {
			this.libraryID = params.libraryID ?? null;
			this.conditions = [];
		}

		addCondition(condition, operator, value) {
			const allowed = {
				tag: ["is", "isNot", "contains", "doesNotContain"],
				includeDeleted: ["true", "false"],
				deleted: ["true", "false"],
			};
			if (!allowed[condition]) {
				throw new Error(`the fake Zotero.Search does not model the condition '${condition}'`);
			}
			if (!allowed[condition].includes(operator)) {
				throw new Error(`Invalid operator '${operator}' for condition '${condition}'`);
			}
			this.conditions.push({ condition, operator, value });
		}

		async search() {
			env.searches = (env.searches || []).concat([{ libraryID: this.libraryID, conditions: plain(this.conditions) }]);
			const flag = name => this.conditions.find(c => c.condition === name)?.operator === "true";
			return [...items.values()].filter((item) => {
				if (this.libraryID !== null && item.libraryID !== this.libraryID) {
					return false;
				}
				if (!flag("includeDeleted") && (flag("deleted") ? !item.deleted : item.deleted)) {
					return false;
				}
				const tags = (item._json.tags || []).map(tag => tag.tag);
				return this.conditions.filter(c => c.condition === "tag").every(({ operator, value }) => {
					const contains = tags.some(tag => tag.toLowerCase().includes(String(value).toLowerCase()));
					const is = tags.includes(value);
					return { is, isNot: !is, contains, doesNotContain: !contains }[operator];
				});
			}).map(item => item.id);
		}
	}

	// ------------------------------------------------------------ tree rows, panes, windows
	const row = (ref, type = "collection") => ({
		type,
		ref,
		isCollection: () => type === "collection",
		isLibrary: () => type === "library",
	});
	env.row = row;
	env.collectionRow = name => row(env.collection(name));
	env.libraryRow = () => row({ libraryID, name: "My Library" }, "library");

	const makePane = () => {
		const pane = { selected: null };
		if (version >= 10) {
			pane.getSelectedCollection = () => {
				throw new Error("ZoteroPane.getSelectedCollection() was removed -- use ZoteroPane.getSelectedCollections()");
			};
			pane.getCollectionTreeRow = () => {
				throw new Error("ZoteroPane.getCollectionTreeRow() was removed -- use ZoteroPane.getCollectionTreeRows()");
			};
			pane.getSelectedCollections = () => (pane.selected && pane.selected.isCollection() ? [pane.selected.ref] : []);
			pane.getCollectionTreeRows = () => (pane.selected ? [pane.selected] : []);
		}
		else {
			pane.getSelectedCollection = () => (pane.selected && pane.selected.isCollection() ? pane.selected.ref : false);
			pane.getCollectionTreeRow = () => pane.selected || false;
		}
		return pane;
	};

	/** A main window; Zotero 7's has #zotero-collectionmenu with Zotero's own command handler. */
	env.openWindow = () => {
		const window = { closed: false };
		const doc = new FakeDocument(window);
		window.document = doc;
		window.ZoteroPane = makePane();
		window.MozXULElement = {
			insertFTLIfNeeded(name) {
				if (!doc.querySelector(`[href="${name}"]`)) {
					doc.head.appendChild(new FakeElement(doc, "html:link", { rel: "localization", href: name }));
				}
			},
		};
		doc.l10n = fakeL10n(doc, env.l10nErrors);
		const popup = doc.documentElement.appendChild(new FakeElement(doc, "menupopup", { id: "zotero-collectionmenu" }));
		const zoteroOptions = ["sync", "newCollection", "newSavedSearch", "newSubcollection", "deleteCollection"];
		for (const id of zoteroOptions) {
			popup.appendChild(new FakeElement(doc, "menuitem", { id }));
		}
		// Zotero 7.0's ZoteroPane.onCollectionContextMenuSelect: `o.oncommand` with o undefined throws.
		popup.addEventListener("command", (event) => {
			event.stopPropagation();
			const option = zoteroOptions.map(id => ({ id, oncommand() {} })).find(o => o.id === event.target.id);
			option.oncommand();
		});
		env.windows.push(window);
		return window;
	};
	env.closeWindow = (window) => {
		window.closed = true;
		env.windows = env.windows.filter(other => other !== window);
	};
	env.collectionMenu = window => window.document.getElementById("zotero-collectionmenu");
	/** Zotero 7: right-click on `treeRow` (popupshowing), then whether our item shows. */
	env.showCollectionMenu = (window, treeRow) => {
		window.ZoteroPane.selected = treeRow;
		const popup = env.collectionMenu(window);
		popup.dispatchEvent(new FakeEvent("popupshowing", popup));
		return popup;
	};
	env.click = (element) => element.dispatchEvent(new FakeEvent("command", element));

	// ------------------------------------------------------------ MenuManager (Zotero 8+)
	const contextFor = (window, treeRow, menuElem) => {
		const state = { visible: true, enabled: true };
		const defaults = {
			get menuElem() {
				return menuElem;
			},
			setL10nArgs() {},
			setEnabled: (enabled) => {
				state.enabled = enabled;
			},
			setVisible: (visible) => {
				state.visible = visible;
			},
			setIcon() {},
		};
		const fromPane = version >= 10
			? {
				get collectionTreeRow() {
					throw new Error("collectionTreeRow was removed -- use collectionTreeRows");
				},
				collectionTreeRows: treeRow ? [treeRow] : [],
				tabType: "library",
				tabSubType: undefined,
				tabID: "zotero-pane",
			}
			: { collectionTreeRow: treeRow, tabType: "library", tabSubType: undefined, tabID: "zotero-pane" };
		const context = {};
		if (version >= 10) {
			// Zotero 10 copies descriptors, so the throwing getter stays a getter.
			Object.defineProperties(context, Object.getOwnPropertyDescriptors(defaults));
			Object.defineProperties(context, Object.getOwnPropertyDescriptors(fromPane));
		}
		else {
			Object.assign(context, defaults, fromPane);
		}
		return { context, state };
	};

	const MenuManager = {
		registerMenu(menu) {
			const problems = [];
			if (typeof menu.menuID !== "string" || typeof menu.pluginID !== "string") {
				problems.push("menuID and pluginID must be strings");
			}
			if (!VALID_TARGETS.includes(menu.target)) {
				problems.push(`Option 'target' must be one of ${VALID_TARGETS.join(", ")}, got ${menu.target}`);
			}
			if (!Array.isArray(menu.menus) || !menu.menus.length) {
				problems.push("'menus' property must not be empty");
			}
			for (const entry of menu.menus || []) {
				if (!["menuitem", "separator", "submenu"].includes(entry.menuType)) {
					problems.push(`bad menuType ${entry.menuType}`);
				}
				if (entry.menuType === "separator" && menu.target === "main/library/collection") {
					problems.push("top-level separators are not allowed");
				}
			}
			const key = `${menu.pluginID}-${menu.menuID}`;
			if (env.menus.has(key)) {
				problems.push(`'menuID' must be unique, got ${key}`);
			}
			if (problems.length) {
				env.debug.push(`MenuAPI: ${problems.join("; ")}`);
				return false;
			}
			env.menus.set(key, menu);
			return key;
		},
		unregisterMenu(key) {
			return env.menus.delete(key);
		},
	};
	/** Zotero 8+: the collection menu opens on `treeRow`: runs onShowing, says what it set. */
	env.showMenu = (window, treeRow, target = "main/library/collection") => {
		const results = [];
		for (const menu of env.menus.values()) {
			if (menu.target !== target) {
				continue;
			}
			for (const entry of menu.menus) {
				const menuElem = new FakeElement(window.document, "menuitem");
				const { context, state } = contextFor(window, treeRow, menuElem);
				entry.onShowing?.(new FakeEvent("popupshowing", env.collectionMenu(window)), context);
				results.push({ entry, ...state });
			}
		}
		return results;
	};
	/** Zotero 8+: the user chooses our menuitem on `treeRow`; returns what onCommand returned. */
	env.chooseMenu = (window, treeRow, target = "main/library/collection") => {
		const [menu] = [...env.menus.values()].filter(m => m.target === target);
		const entry = menu.menus[0];
		const menuElem = new FakeElement(window.document, "menuitem");
		const { context } = contextFor(window, treeRow, menuElem);
		window.ZoteroPane.selected = treeRow;
		return entry.onCommand(new FakeEvent("command", menuElem), context);
	};
	env.contextFor = contextFor;

	// ------------------------------------------------------------ the Zotero object
	class FakeProgressWindow {
		constructor(progressOptions = {}) {
			this.options = progressOptions;
			this.headlines = [];
			this.descriptions = [];
			this.shown = false;
			this.closed = false;
			this.closeTimer = null;
			env.progressWindows.push(this);
		}

		show() {
			this.shown = true;
			return true;
		}

		changeHeadline(text) {
			this.headlines.push(text);
		}

		addDescription(text) {
			this.descriptions.push(text);
		}

		startCloseTimer(ms) {
			this.closeTimer = ms;
		}

		close() {
			this.closed = true;
		}
	}

	const Zotero = {
		Prefs: {
			get(name, global) {
				if (!global) {
					throw new Error("the plugin's preferences are global (extensions.litrank.*)");
				}
				return prefs.get(name);
			},
			set(name, value, global) {
				if (!global) {
					throw new Error("the plugin's preferences are global (extensions.litrank.*)");
				}
				prefs.set(name, value);
			},
		},
		Item: FakeItem,
		Collection: FakeCollection,
		Search: FakeSearch,
		Items: {
			get: id => items.get(id) || false,
			getAsync: async ids => (Array.isArray(ids) ? ids.map(id => items.get(id) || false) : items.get(ids) || false),
			getByLibraryAndKey: (lib, key) => [...items.values()].find(item => item.libraryID === lib && item.key === key) || false,
		},
		Collections: {
			get: id => collections.get(id) || false,
			getByLibraryAndKey: (lib, key) => [...collections.values()].find(c => c.libraryID === lib && c.key === key) || false,
		},
		PreferencePanes: {
			async register(pane) {
				if (!pane.pluginID || !pane.src) {
					throw new Error("pluginID and src must be provided");
				}
				env.panes.push(pane);
				return `plugin-pane-${pane.pluginID}`;
			},
		},
		ProgressWindow: FakeProgressWindow,
		getMainWindows: () => env.windows.slice(),
		getMainWindow: () => env.windows[0] || null,
		getActiveZoteroPane: () => (env.windows[0] ? env.windows[0].ZoteroPane : null),
		alert(window, title, message) {
			env.alerts.push({ window, title, message });
		},
		debug(message) {
			env.debug.push(String(message));
		},
		logError(error) {
			env.errors.push(error);
		},
	};
	if (version >= 8) {
		Zotero.MenuManager = MenuManager;
	}
	env.Zotero = Zotero;

	// ------------------------------------------------------------ Services, ChromeUtils, timers
	env.subprocess = fakeSubprocess(options.subprocess);
	const esm = options.esm !== false;
	env.ChromeUtils = {
		importESModule(url) {
			if (esm && url === "resource://gre/modules/Subprocess.sys.mjs") {
				return { Subprocess: env.subprocess.Subprocess };
			}
			throw new Error(`Failed to load ${url}`);
		},
		import(url) {
			if (url === "resource://gre/modules/Subprocess.jsm") {
				return { Subprocess: env.subprocess.Subprocess };
			}
			throw new Error(`Failed to load ${url}`);
		},
	};

	let context = null;
	env.Services = {
		prompt: {
			prompt(window, title, text, value, checkMessage, check) {
				env.prompts.push({ window, title, text, initial: value.value });
				const answer = env.answers.length ? env.answers.shift() : null;
				if (answer === null) {
					return false;
				}
				value.value = answer;
				return true;
			},
			alert(window, title, message) {
				env.alerts.push({ window, title, message, via: "Services.prompt.alert" });
			},
		},
		scriptloader: {
			loadSubScript(url, target) {
				if (!url.startsWith(ROOT_URI)) {
					throw new Error(`fake loadSubScript only loads the plugin's files, not ${url}`);
				}
				const file = path.join(PLUGIN_DIR, ...url.slice(ROOT_URI.length).split("/"));
				const code = fs.readFileSync(file, "utf8");
				if (target && target !== context) {
					throw new Error("the plugin loads its scripts into its own sandbox");
				}
				vm.runInContext(code, context, { filename: file });
			},
		},
	};

	const timeScale = options.timeScale ?? 0.001;
	env.setTimeout = (callback, ms) => {
		env.timers.push(ms);
		return setTimeout(callback, Math.round(ms * timeScale));
	};

	/** The sandbox's globals, as Zotero's plugins.js gives them (plus APP_SHUTDOWN and the other reasons). */
	context = vm.createContext({
		Zotero,
		Services: env.Services,
		ChromeUtils: env.ChromeUtils,
		setTimeout: env.setTimeout,
		clearTimeout,
		console,
		APP_STARTUP: 1,
		APP_SHUTDOWN: 2,
		ADDON_ENABLE: 3,
		ADDON_DISABLE: 4,
	});
	env.context = context;

	env.loadPlugin = () => {
		env.Services.scriptloader.loadSubScript(`${ROOT_URI}litrank.js`);
		const Litrank = vm.runInContext("Litrank", context);
		Litrank.init({ id: PLUGIN_ID, version: "0.1.0", rootURI: ROOT_URI });
		return Litrank;
	};
	env.loadBootstrap = () => {
		const file = path.join(PLUGIN_DIR, "bootstrap.js");
		vm.runInContext(fs.readFileSync(file, "utf8"), context, { filename: file });
		return context;
	};
	return env;
}

// ---------------------------------------------------------------------------- Subprocess

/**
 * A fake of Firefox's Subprocess module.
 * @param {object} [options]
 * @param {boolean} [options.found=true] whether pathSearch finds the interpreter
 * @param {boolean} [options.badExecutable=false] whether call() rejects with ERROR_BAD_EXECUTABLE
 * @param {boolean} [options.hang=false] a process that never answers nor exits (until killed)
 * @param {function} [options.respond] request -> {stdout, stderr, exitCode}; default: stdout = options.reply
 * @param {object} [options.reply] the reply to print
 */
export function fakeSubprocess(options = {}) {
	const ERROR_BAD_EXECUTABLE = 0xff7;
	const calls = { pathSearch: [], call: [], stdin: "", stdinClosed: false, killed: false, exitCode: null };
	const respond = options.respond || (() => ({ stdout: JSON.stringify(options.reply ?? {}), stderr: "", exitCode: 0 }));

	const deferred = () => {
		let resolve;
		const promise = new Promise((res) => {
			resolve = res;
		});
		return { promise, resolve };
	};

	const Subprocess = {
		ERROR_END_OF_FILE: 0xff7 + 1,
		ERROR_INVALID_JSON: 0xff7 + 2,
		ERROR_BAD_EXECUTABLE,
		async pathSearch(command) {
			calls.pathSearch.push(command);
			if (options.found === false) {
				const error = new Error(`Executable not found: ${command}`);
				error.errorCode = ERROR_BAD_EXECUTABLE;
				throw error;
			}
			return command.startsWith("/") || /^[A-Za-z]:\\/.test(command) ? command : `/usr/bin/${command}`;
		},
		async call(spawn) {
			calls.call.push(JSON.parse(JSON.stringify(spawn)));
			if (!spawn.command || !(spawn.command.startsWith("/") || /^[A-Za-z]:\\/.test(spawn.command))) {
				throw new Error(`File at path "${spawn.command}" does not exist, or is not executable`);
			}
			if (options.badExecutable) {
				const error = new Error(`File at path "${spawn.command}" does not exist, or is not executable`);
				error.errorCode = ERROR_BAD_EXECUTABLE;
				throw error;
			}
			const finished = deferred(); // output ready (after stdin closed) or killed
			const exited = deferred();
			let output = null;
			const pipe = (name) => {
				let chunks = null;
				return {
					async readString() {
						await finished.promise;
						if (chunks === null) {
							const text = output ? output[name] || "" : "";
							// Two chunks, so that the plugin must read until "".
							chunks = text ? [text.slice(0, Math.ceil(text.length / 2)), text.slice(Math.ceil(text.length / 2))].filter(Boolean) : [];
						}
						return chunks.length ? chunks.shift() : "";
					},
				};
			};
			return {
				pid: 4242,
				stdin: {
					async write(text) {
						if (calls.stdinClosed) {
							throw new Error("stdin is closed");
						}
						calls.stdin += text;
						return { bytesWritten: text.length };
					},
					async close() {
						calls.stdinClosed = true;
						if (options.hang) {
							return {};
						}
						let request = null;
						try {
							request = JSON.parse(calls.stdin);
						}
						catch (e) {
							request = calls.stdin;
						}
						output = respond(request);
						finished.resolve();
						calls.exitCode = output.exitCode ?? 0;
						exited.resolve({ exitCode: calls.exitCode });
						return {};
					},
				},
				stdout: pipe("stdout"),
				stderr: pipe("stderr"),
				wait: () => exited.promise,
				async kill() {
					calls.killed = true;
					output = output || { stdout: "", stderr: "", exitCode: -15 };
					finished.resolve();
					calls.exitCode = calls.exitCode ?? -15;
					exited.resolve({ exitCode: calls.exitCode });
					return exited.promise;
				},
			};
		},
	};
	return { Subprocess, calls };
}
