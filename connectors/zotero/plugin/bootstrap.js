/*
 * litrank for Zotero 7–10: the bootstrap entry points Zotero calls (as in Zotero's sample
 * plugin, make-it-red). The logic is in litrank.js, loaded into this sandbox as `Litrank`.
 */

/* global Zotero, Services, Litrank:writable, APP_SHUTDOWN */

var Litrank;

function log(message) {
	Zotero.debug("litrank: " + message);
}

function install() {
	log("installed");
}

async function startup({ id, version, rootURI }) {
	log(`starting ${version}`);
	Services.scriptloader.loadSubScript(rootURI + "litrank.js");
	Litrank.init({ id, version, rootURI });
	// Zotero 8+: Zotero.MenuManager; Zotero 7: a menuitem in each open main window (windows
	// opened later get it through onMainWindowLoad).
	Litrank.startup();
	try {
		await Zotero.PreferencePanes.register({
			pluginID: id,
			src: rootURI + "prefs.xhtml",
			label: "litrank",
		});
	}
	catch (e) {
		Zotero.logError(e);
	}
}

function onMainWindowLoad({ window }) {
	if (Litrank) {
		Litrank.addToWindow(window);
	}
}

function onMainWindowUnload({ window }) {
	if (Litrank) {
		Litrank.removeFromWindow(window);
	}
}

function shutdown(data, reason) {
	log("shutting down");
	if (typeof APP_SHUTDOWN !== "undefined" && reason === APP_SHUTDOWN) {
		return; // Zotero is quitting: nothing to take out of its windows.
	}
	if (Litrank) {
		Litrank.shutdown(); // the preference pane goes away with the plugin by itself
	}
	Litrank = undefined;
}

function uninstall() {
	log("uninstalled");
}
