// The request the plugin builds (contract version 1): from the fake library of
// tests/data/zotero-plugin/items.json it must be exactly tests/data/zotero-plugin/request.json,
// the file the Python tests feed to `litrank zotero-plugin answer`.
import { test } from "node:test";
import assert from "node:assert/strict";

import { makeEnvironment, plain, readFixture, startPlugin } from "./fake-zotero.mjs";

const setup = startPlugin;

test("the request built from items.json is request.json, sent on stdin to python -m recommender zotero-plugin answer", async () => {
	const { env, window, Litrank } = setup({ prefs: { "extensions.litrank.python": "/opt/litrank/bin/python" } });
	const counts = await Litrank.recommend(window, env.collection("ML reading"));
	assert.ok(counts, JSON.stringify(env.alerts));

	const { calls } = env.subprocess;
	assert.deepEqual(calls.pathSearch, ["/opt/litrank/bin/python"]);
	assert.equal(calls.call.length, 1);
	const spawn = calls.call[0];
	assert.equal(spawn.command, "/opt/litrank/bin/python");
	assert.deepEqual(spawn.arguments, ["-m", "recommender", "zotero-plugin", "answer"]);
	assert.equal(spawn.stderr, "pipe");
	assert.equal(spawn.environment.PYTHONIOENCODING, "utf-8");
	assert.equal(spawn.environmentAppend, true, "the rest of Zotero's environment is kept");
	assert.equal(calls.stdinClosed, true);

	const request = JSON.parse(calls.stdin);
	const expected = readFixture("request.json");
	assert.deepEqual(request, expected);
	// What that means, spelled out:
	assert.deepEqual(Object.keys(request).sort(), ["candidates", "library", "picks", "recommended", "top", "v"]);
	assert.deepEqual(request.library.map(item => item.key), ["33TK9NH9", "3EWF3P9V", "85MTWF4F", "PQKBRC33", "R39UWNFK", "U52JBZ4X"],
		"the collection's regular items and its subcollection's, once each, sorted by key; not the trashed one, the attachment, the other collection's book, nor litrank's picks");
	assert.deepEqual(request.picks.map(item => [item.key, item.collections, item.deleted === true]), [
		["PICKAAA2", ["RECMND22"], false],
		["PICKBBB2", ["RECMND22"], false],
		["PICKCCC2", ["RECMND22"], false],
		["PICKDDD2", [], false], // dragged out of Recommended
		["PICKEEE2", ["RECMND22"], true], // in the trash
	]);
	assert.ok(request.picks[0].tags.some(tag => tag.tag === "litrank:liked"));
	assert.deepEqual(request.recommended, { key: "RECMND22", path: "ML reading/Recommended" });
	assert.deepEqual(request.candidates, { source: "examples/icml2026" });
	assert.equal(request.top, 5);
	// The search for litrank's items: by tag, the trash included.
	assert.deepEqual(env.searches, [{ libraryID: 1, conditions: [
		{ condition: "tag", operator: "contains", value: "litrank" },
		{ condition: "includeDeleted", operator: "true", value: undefined },
	] }].map(plain));
});

test("without a Recommended collection the key is null; the path escapes a / in a name and uses the configured name", async () => {
	const library = readFixture("items.json");
	library.collections = library.collections.filter(c => c.key !== "RECMND22");
	library.collections.find(c => c.key === "PLASMA22").name = "Plasma/I-O";
	for (const item of library.items) {
		item.collections = (item.collections || []).filter(key => key !== "RECMND22");
	}
	const { env, Litrank } = setup({ library, prefs: { "extensions.litrank.collectionName": "From litrank" } });
	const plasma = env.collection("Plasma/I-O");
	const { request, recommended, path } = await Litrank.buildRequest(plasma, { source: "arxiv:cs.LG", top: 3, collectionName: "From litrank" });
	assert.equal(recommended, null);
	assert.equal(path, "ML reading/Plasma\\/I-O/From litrank");
	assert.deepEqual(plain(request.recommended), { key: null, path: "ML reading/Plasma\\/I-O/From litrank" });
	assert.deepEqual(plain(request.library).map(item => item.key), ["85MTWF4F", "R39UWNFK"]);
	assert.equal(request.picks.length, 5, "every litrank item of the library, wherever it is");
	assert.deepEqual(plain(request.candidates), { source: "arxiv:cs.LG" });
	assert.equal(request.top, 3);
});

test("the dialog: the source is remembered per collection, the number of picks defaults to the preference, Cancel runs nothing", async () => {
	const { env, window, Litrank } = setup({ answers: ["  openreview:ICML.cc/2026/Conference ", "7"] });
	const ml = env.collection("ML reading");
	await Litrank.recommend(window, ml);
	assert.equal(env.prompts.length, 2);
	assert.equal(env.prompts[0].initial, "", "nothing remembered yet");
	assert.match(env.prompts[0].text, /Candidate papers for “ML reading”/);
	assert.equal(env.prompts[1].initial, "20", "the number of picks comes from extensions.litrank.top");
	assert.match(env.prompts[1].text, /ML reading\/Recommended/);
	assert.deepEqual(JSON.parse(env.prefs.get("extensions.litrank.sources")), { "1/MLRDNG22": "openreview:ICML.cc/2026/Conference" });
	const request = JSON.parse(env.subprocess.calls.stdin);
	assert.deepEqual(request.candidates, { source: "openreview:ICML.cc/2026/Conference" });
	assert.equal(request.top, 7);

	// The next time: the source is offered again; Cancel on it runs nothing.
	env.answers.push(null);
	const before = env.subprocess.calls.call.length;
	assert.equal(await Litrank.recommend(window, ml), null);
	assert.equal(env.prompts[2].initial, "openreview:ICML.cc/2026/Conference");
	assert.equal(env.subprocess.calls.call.length, before);

	// Another collection has its own memory.
	env.answers.push(null);
	await Litrank.recommend(window, env.collection("Sherlock"));
	assert.equal(env.prompts[3].initial, "");

	// A number of picks that is not one: said, nothing runs.
	env.answers.push("arxiv:cs.LG", "lots");
	assert.equal(await Litrank.recommend(window, ml), null);
	assert.equal(env.subprocess.calls.call.length, before);
	assert.match(env.alerts.at(-1).message, /“lots” is not a number of picks/);
});
