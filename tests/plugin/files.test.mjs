// The plugin's static files: manifest.json as Zotero 7–10 read it, the default preferences, the
// Fluent strings (every id the code and the settings pane use, and the module's English
// fallbacks word for word), and a well-formed settings pane.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import vm from "node:vm";

import { makeEnvironment, parseFTL, PLUGIN_DIR } from "./fake-zotero.mjs";

const read = name => fs.readFileSync(path.join(PLUGIN_DIR, name), "utf8");

test("manifest.json: a Zotero plugin for Zotero 7.0 up to 10.*", () => {
	const manifest = JSON.parse(read("manifest.json"));
	assert.equal(manifest.manifest_version, 2);
	assert.equal(manifest.name, "litrank");
	assert.match(manifest.version, /^\d+\.\d+\.\d+$/);
	assert.ok(manifest.description && manifest.author);
	const zotero = manifest.applications.zotero;
	assert.equal(zotero.id, "litrank@litrank.invalid");
	assert.match(zotero.update_url, /^https:\/\//);
	assert.equal(zotero.strict_min_version, "7.0");
	assert.equal(zotero.strict_max_version, "10.*");
	for (const file of ["bootstrap.js", "litrank.js", "prefs.js", "prefs.xhtml", "locale/en-US/litrank.ftl"]) {
		assert.ok(fs.existsSync(path.join(PLUGIN_DIR, file)), file);
	}
});

test("prefs.js: the defaults, one pref() call a line (the Python build rewrites the interpreter's)", () => {
	const prefs = {};
	vm.runInNewContext(read("prefs.js"), { pref: (name, value) => { prefs[name] = value; } });
	assert.deepEqual(prefs, {
		"extensions.litrank.python": "python3",
		"extensions.litrank.collectionName": "Recommended",
		"extensions.litrank.top": 20,
		"extensions.litrank.timeoutSeconds": 600,
		"extensions.litrank.sources": "{}",
	});
	assert.match(read("prefs.js"), /^pref\("extensions\.litrank\.python", "python3"\);$/m);
	const env = makeEnvironment();
	const Litrank = env.loadPlugin();
	assert.deepEqual({ ...Litrank.settings() }, { python: "python3", collectionName: "Recommended", top: 20, timeoutSeconds: 600 });
	// Junk typed into the settings falls back to the defaults.
	env.prefs.set("extensions.litrank.top", 0);
	env.prefs.set("extensions.litrank.timeoutSeconds", -5);
	env.prefs.set("extensions.litrank.collectionName", "  ");
	assert.deepEqual({ ...Litrank.settings() }, { python: "python3", collectionName: "Recommended", top: 20, timeoutSeconds: 600 });
});

test("litrank.ftl has every string: the menu label, the code's messages (its English fallbacks say the same), the settings pane's", () => {
	const messages = parseFTL(read("locale/en-US/litrank.ftl"));
	assert.equal(messages["litrank-menu-recommend"].attributes.label, "Recommend papers for this collection…");

	const env = makeEnvironment();
	const Litrank = env.loadPlugin();
	for (const [id, english] of Object.entries(Litrank.ENGLISH)) {
		assert.ok(messages[id], `${id} is missing from litrank.ftl`);
		assert.equal(messages[id].value, english, `${id}: litrank.ftl and litrank.js differ`);
	}
	const code = read("litrank.js");
	for (const [, id] of code.matchAll(/"(litrank-[a-z-]+)"/g)) {
		if (id === Litrank.MENUITEM_ID) {
			continue; // an element id, not a string
		}
		assert.ok(messages[id], `litrank.js uses ${id}, which litrank.ftl lacks`);
		if (messages[id].value !== null) {
			assert.ok(id in Litrank.ENGLISH, `${id} has no English fallback`);
		}
	}
	const pane = read("prefs.xhtml");
	const ids = [...pane.matchAll(/data-l10n-id="([^"]+)"/g)].map(match => match[1]);
	assert.ok(ids.length >= 6);
	for (const id of ids) {
		assert.ok(messages[id] && messages[id].value, `prefs.xhtml uses ${id}, which litrank.ftl lacks`);
	}
});

test("prefs.xhtml: a well-formed fragment binding the four preferences, loading litrank.ftl", () => {
	const pane = read("prefs.xhtml");
	const bound = [...pane.matchAll(/preference="([^"]+)"/g)].map(match => match[1]).sort();
	assert.deepEqual(bound, ["extensions.litrank.collectionName", "extensions.litrank.python", "extensions.litrank.timeoutSeconds", "extensions.litrank.top"]);
	assert.match(pane, /<html:link rel="localization" href="litrank.ftl"\/>/);
	// Tags balance (what MozXULElement.parseXULToFragment needs).
	const stack = [];
	const body = pane.replace(/<!--[\s\S]*?-->/g, "");
	for (const [, closing, name, selfClosing] of body.matchAll(/<(\/?)([\w:-]+)(?:\s[^>]*?)?(\/?)>/g)) {
		if (selfClosing) {
			continue;
		}
		if (closing) {
			assert.equal(stack.pop(), name, `</${name}> closes the wrong element`);
		}
		else {
			stack.push(name);
		}
	}
	assert.deepEqual(stack, []);
	// Every id is unique and ours.
	const ids = [...body.matchAll(/\sid="([^"]+)"/g)].map(match => match[1]);
	assert.equal(new Set(ids).size, ids.length);
	assert.ok(ids.every(id => id.startsWith("litrank-")));
});
