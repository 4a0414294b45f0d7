// The collection context menu on Zotero 7 (a menuitem in #zotero-collectionmenu), 8–9
// (Zotero.MenuManager, context.collectionTreeRow) and 10 (context.collectionTreeRows, a
// collectionTreeRow getter that throws, ZoteroPane.getSelectedCollection() that throws), and the
// bootstrap entry points.
import { test } from "node:test";
import assert from "node:assert/strict";

import { makeEnvironment, plain, readFixture, ROOT_URI, PLUGIN_ID } from "./fake-zotero.mjs";

function setup(version, answers = ["examples/icml2026", "5"]) {
	const env = makeEnvironment({ version, answers, subprocess: { reply: readFixture("reply.json") } });
	const window = env.openWindow();
	const Litrank = env.loadPlugin();
	Litrank.startup();
	return { env, window, Litrank };
}

function sentRequest(env) {
	return JSON.parse(env.subprocess.calls.stdin);
}

test("Zotero 7: a menuitem at the end of #zotero-collectionmenu, shown for collections only, removed at shutdown", async () => {
	const { env, window, Litrank } = setup(7);
	assert.equal(env.Zotero.MenuManager, undefined);
	const popup = env.collectionMenu(window);
	const item = popup.children.at(-1);
	assert.equal(item.id, Litrank.MENUITEM_ID);
	assert.equal(item.tagName, "menuitem");
	assert.equal(item.getAttribute("data-l10n-id"), "litrank-menu-recommend");
	assert.ok(window.document.querySelector('[href="litrank.ftl"]'), "the Fluent file is inserted into the window");

	env.showCollectionMenu(window, env.libraryRow());
	assert.equal(item.hidden, true, "hidden on a library row");
	env.showCollectionMenu(window, env.collectionRow("ML reading"));
	assert.equal(item.hidden, false, "shown on a collection row");

	const event = env.click(item);
	assert.equal(event.propagationStopped, true, "Zotero 7's own popup handler must not see our command");
	assert.deepEqual(window.document.errors, []);
	const counts = await Litrank.state.lastRun;
	assert.ok(counts, "the run finished");
	assert.equal(sentRequest(env).recommended.path, "ML reading/Recommended");
	assert.deepEqual(env.alerts, []);

	Litrank.shutdown();
	assert.equal(window.document.getElementById(Litrank.MENUITEM_ID), null);
	assert.equal(popup.listeners.filter(l => l.type === "popupshowing").length, 0, "the popupshowing listener is gone");
	assert.equal(window.document.querySelector('[href="litrank.ftl"]'), null);
});

test("Zotero 7: windows opened and closed later get and lose the menuitem, once", () => {
	const { env, window, Litrank } = setup(7);
	const second = env.openWindow();
	Litrank.addToWindow(second);
	Litrank.addToWindow(second); // Zotero may call onMainWindowLoad for a window startup already saw
	const ours = w => env.collectionMenu(w).children.filter(child => child.id === Litrank.MENUITEM_ID);
	assert.equal(ours(second).length, 1);
	assert.equal(ours(window).length, 1);
	Litrank.removeFromWindow(second);
	assert.equal(ours(second).length, 0);
	assert.equal(ours(window).length, 1, "the other window keeps it");
	assert.equal(Litrank.state.windows.has(second), false);
});

for (const version of [8, 9]) {
	test(`Zotero ${version}: Zotero.MenuManager on main/library/collection, the collection from context.collectionTreeRow, unregistered at shutdown`, async () => {
		const { env, window, Litrank } = setup(version);
		assert.equal(env.menus.size, 1);
		const [[key, menu]] = [...env.menus];
		assert.equal(key, `${PLUGIN_ID}-${Litrank.MENU_ID}`);
		assert.equal(menu.target, "main/library/collection");
		assert.equal(menu.pluginID, PLUGIN_ID);
		assert.deepEqual(plain(menu.menus.map(m => [m.menuType, m.l10nID])), [["menuitem", "litrank-menu-recommend"]]);
		assert.equal(window.document.getElementById(Litrank.MENUITEM_ID), null, "no hand-made menuitem on Zotero 8+");
		assert.ok(window.document.querySelector('[href="litrank.ftl"]'), "the Fluent file is inserted for the menu's label");

		assert.deepEqual(env.showMenu(window, env.collectionRow("Plasma")).map(r => r.visible), [true]);
		assert.deepEqual(env.showMenu(window, env.libraryRow()).map(r => r.visible), [false]);

		// The pane's selection is elsewhere: the context's row must win.
		window.ZoteroPane.selected = env.collectionRow("Sherlock");
		const counts = await env.chooseMenu(window, env.collectionRow("Plasma"));
		assert.ok(counts);
		assert.equal(sentRequest(env).recommended.path, "ML reading/Plasma/Recommended");
		assert.deepEqual(sentRequest(env).library.map(item => item.key), ["85MTWF4F", "R39UWNFK"]);

		Litrank.shutdown();
		assert.equal(env.menus.size, 0);
		assert.equal(Litrank.state.menuKey, null);
	});
}

test("Zotero 10: the collection from context.collectionTreeRows[0].ref, never the throwing collectionTreeRow; getSelectedCollections() as the fallback", async () => {
	const { env, window, Litrank } = setup(10);
	assert.equal(env.menus.size, 1);
	const { context } = env.contextFor(window, env.collectionRow("ML reading"), null);
	assert.throws(() => context.collectionTreeRow, /was removed/, "the fake has Zotero 10's throwing getter");
	assert.equal(Litrank.collectionFromContext(context, window), env.collection("ML reading"));
	assert.deepEqual(env.showMenu(window, env.collectionRow("ML reading")).map(r => r.visible), [true]);
	assert.deepEqual(env.showMenu(window, env.libraryRow()).map(r => r.visible), [false]);

	// No rows in the context: ZoteroPane.getSelectedCollection() throws in 10, getSelectedCollections() answers.
	window.ZoteroPane.selected = env.collectionRow("Sherlock");
	assert.throws(() => window.ZoteroPane.getSelectedCollection(), /was removed/);
	assert.equal(Litrank.collectionFromContext({}, window), env.collection("Sherlock"));

	const counts = await env.chooseMenu(window, env.collectionRow("ML reading"));
	assert.ok(counts);
	assert.deepEqual(sentRequest(env), readFixture("request.json"));
	assert.deepEqual(env.alerts, []);

	Litrank.shutdown();
	assert.equal(env.menus.size, 0);
});

test("bootstrap.js: startup loads litrank.js, registers the menu and the preference pane; shutdown undoes it (not when Zotero quits)", async () => {
	for (const version of [7, 10]) {
		const env = makeEnvironment({ version });
		const window = env.openWindow();
		const scope = env.loadBootstrap();
		await scope.startup({ id: PLUGIN_ID, version: "0.1.0", rootURI: ROOT_URI }, scope.APP_STARTUP);
		assert.equal(typeof scope.Litrank, "object");
		assert.deepEqual(env.panes.map(p => [p.pluginID, p.src, p.label]), [[PLUGIN_ID, `${ROOT_URI}prefs.xhtml`, "litrank"]]);
		if (version === 7) {
			assert.ok(window.document.getElementById(scope.Litrank.MENUITEM_ID));
		}
		else {
			assert.equal(env.menus.size, 1);
		}
		const later = env.openWindow();
		scope.onMainWindowLoad({ window: later });
		assert.ok(later.document.querySelector('[href="litrank.ftl"]'));
		scope.onMainWindowUnload({ window: later });
		assert.equal(later.document.querySelector('[href="litrank.ftl"]'), null);

		scope.shutdown({ id: PLUGIN_ID }, scope.APP_SHUTDOWN);
		assert.equal(typeof scope.Litrank, "object", "nothing to undo when Zotero quits");
		scope.shutdown({ id: PLUGIN_ID }, scope.ADDON_DISABLE);
		assert.equal(scope.Litrank, undefined);
		assert.equal(env.menus.size, 0);
		assert.equal(window.document.getElementById("litrank-recommend-for-collection"), null);
		assert.equal(window.document.querySelector('[href="litrank.ftl"]'), null);
		scope.onMainWindowLoad({ window: later }); // after shutdown: no error
	}
});
