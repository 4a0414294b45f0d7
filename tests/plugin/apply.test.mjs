// Applying litrank's reply (tests/data/zotero-plugin/reply.json, contract version 1): the
// Recommended collection made once, new picks tagged and annotated, dropped picks taken out,
// and nothing of the user's ever touched, trashed or deleted. The assertions are about
// behaviour, not titles: reply.json may be replaced by one the Python side generates.
import { test } from "node:test";
import assert from "node:assert/strict";

import { makeEnvironment, plain, readFixture, startPlugin } from "./fake-zotero.mjs";

const USER_KEYS = ["33TK9NH9", "3EWF3P9V", "85MTWF4F", "PQKBRC33", "R39UWNFK", "U52JBZ4X", "Z8N84QAJ", "2SS8NXZI", "TM8QRS36"];

function libraryWithoutRecommended() {
	const library = readFixture("items.json");
	library.collections = library.collections.filter(c => c.key !== "RECMND22");
	// Nothing of litrank's yet: the first run.
	library.items = library.items.filter(item => !(item.tags || []).some(tag => tag.tag === "litrank"));
	return library;
}

const setup = startPlugin;

function snapshot(env, keys) {
	return Object.fromEntries(keys.map(key => [key, plain(env.item(key).toJSON())]));
}

test("a first run creates the Recommended collection once, under the right-clicked one; a second apply creates no second collection", async () => {
	const reply = readFixture("reply.json");
	reply.update = [];
	reply.remove = [];
	const { env, Litrank } = setup({ library: libraryWithoutRecommended() });
	const ml = env.collection("ML reading");
	const options = { collection: ml, recommended: null, collectionName: "Recommended" };

	const first = await Litrank.applyReply(reply, options);
	const made = env.writes.filter(w => w.type === "collection");
	assert.equal(made.length, 1);
	assert.equal(made[0].name, "Recommended");
	assert.equal(made[0].parentID, ml.id);
	assert.equal(first.createdCollection, true);
	const recommended = env.collection("Recommended");
	assert.equal(Litrank.findRecommended(ml, "Recommended"), recommended);
	assert.equal(recommended.getChildItems().length, reply.create.length);

	const second = await Litrank.applyReply(reply, options); // found by name, not made again
	assert.equal(second.createdCollection, false);
	assert.equal(env.writes.filter(w => w.type === "collection").length, 1);
	assert.equal([...env.collections.values()].filter(c => c.name === "Recommended").length, 1);
	assert.equal(second.created, 0, "the same reply applied again does not create its picks twice");
	assert.equal(recommended.getChildItems().length, reply.create.length);
});

test("reply.json: new picks get the litrank tag and their Extra, the update and the remove touch only litrank's items, the user's item is skipped", async () => {
	const reply = readFixture("reply.json");
	const { env, Litrank } = setup();
	const ml = env.collection("ML reading");
	const recommended = env.collection("Recommended");
	const userBefore = snapshot(env, USER_KEYS);
	const untouchedPicks = ["PICKAAA2", "PICKDDD2", "PICKEEE2"].filter(key => ![...reply.update, ...reply.remove].some(c => c.key === key));
	const picksBefore = snapshot(env, untouchedPicks);

	const counts = plain(await Litrank.applyReply(reply, { collection: ml, recommended, collectionName: "Recommended" }));
	const litrankKeys = new Set(readFixture("request.json").picks.map(item => item.key));
	const updates = reply.update.filter(c => litrankKeys.has(c.key));
	const removes = reply.remove.filter(c => litrankKeys.has(c.key));
	const strangers = [...reply.update, ...reply.remove].filter(c => USER_KEYS.includes(c.key));
	assert.deepEqual(
		[counts.created, counts.updated, counts.removed, counts.skipped, counts.createdCollection],
		[reply.create.length, updates.length, removes.length, strangers.length, false],
	);

	// Created: tagged litrank, Extra as litrank wrote it, in Recommended only, never trashed.
	const created = env.writes.filter(w => w.type === "item" && w.action === "add");
	assert.equal(created.length, reply.create.length);
	created.forEach((write, index) => {
		const data = reply.create[index].data;
		assert.ok(write.data.tags.some(tag => tag.tag === "litrank"));
		assert.equal(write.data.extra, data.extra);
		assert.equal(write.data.title, data.title);
		assert.equal(write.data.itemType, data.itemType);
		assert.deepEqual(write.data.collections, ["RECMND22"]);
		assert.notEqual(write.data.deleted, true);
		assert.equal(write.options.skipSelect, true);
	});

	// Updated: Extra replaced, kept in (or put back into) Recommended.
	for (const { key, extra } of updates) {
		const item = env.item(key);
		assert.equal(item.getField("extra"), extra);
		assert.ok(item.inCollection(recommended.id));
	}
	// Removed: Extra replaced, out of Recommended, not trashed, not deleted.
	for (const { key, extra } of removes) {
		const item = env.item(key);
		assert.equal(item.getField("extra"), extra);
		assert.equal(item.inCollection(recommended.id), false);
		assert.equal(item.deleted, false);
	}
	// The user's items (the one named in the reply too) and the picks not named: untouched.
	assert.deepEqual(snapshot(env, USER_KEYS), userBefore);
	assert.deepEqual(snapshot(env, untouchedPicks), picksBefore);
	const modified = env.writes.filter(w => w.type === "item" && w.action === "modify").map(w => w.key).sort();
	assert.deepEqual(modified, [...updates, ...removes].map(c => c.key).sort());
	assert.equal(env.items.size, readFixture("items.json").items.length + reply.create.length, "nothing deleted");
});

test("a user's item named in update or remove is never edited nor taken out, even when it sits in Recommended; unknown and trashed items are left alone", async () => {
	const library = readFixture("items.json");
	library.items.find(item => item.key === "3EWF3P9V").collections.push("RECMND22"); // the user put their own paper there
	const { env, Litrank } = setup({ library });
	const recommended = env.collection("Recommended");
	const before = snapshot(env, [...USER_KEYS, "PICKEEE2"]);
	const reply = {
		v: 1, picks: [], create: [],
		update: [{ key: "PQKBRC33", extra: "litrank: in ML reading/Recommended" }, { key: "NOSUCHK2", extra: "x" }],
		remove: [{ key: "3EWF3P9V", extra: "litrank: dropped from ML reading/Recommended" }, { key: "PICKEEE2", extra: "litrank: dropped" }],
		feedback: { liked: 0, disliked: 0 }, summary: "",
	};
	const counts = plain(await Litrank.applyReply(reply, { collection: env.collection("ML reading"), recommended, collectionName: "Recommended" }));
	assert.equal(counts.skipped, 2);
	assert.equal(counts.ignored, 2, "a key that does not exist and a pick in the trash");
	assert.deepEqual(env.writes, []);
	assert.deepEqual(snapshot(env, [...USER_KEYS, "PICKEEE2"]), before);
	assert.ok(env.item("3EWF3P9V").inCollection(recommended.id));
});

test("idempotent: a reply whose changes are already there writes nothing", async () => {
	const { env, Litrank } = setup();
	const recommended = env.collection("Recommended");
	const options = { collection: env.collection("ML reading"), recommended, collectionName: "Recommended" };
	const reply = {
		v: 1, picks: [], create: [],
		update: [{ key: "PICKBBB2", extra: env.item("PICKBBB2").getField("extra") }],
		remove: [{ key: "PICKDDD2", extra: env.item("PICKDDD2").getField("extra") }],
		feedback: { liked: 0, disliked: 0 }, summary: "",
	};
	const counts = plain(await Litrank.applyReply(reply, options));
	assert.equal(counts.unchanged, 2);
	assert.deepEqual(env.writes, []);

	// reply.json twice: the second time nothing is written at all.
	await Litrank.applyReply(readFixture("reply.json"), options);
	const written = env.writes.length;
	assert.ok(written > 0);
	const again = plain(await Litrank.applyReply(readFixture("reply.json"), options));
	assert.equal(env.writes.length, written);
	assert.equal(again.created + again.updated + again.removed, 0);
});

test("a reply with a malformed write is refused before anything is written", async () => {
	const { env, Litrank } = setup();
	const broken = readFixture("reply.json");
	broken.create.push({ data: { title: "no item type" } });
	await assert.rejects(
		Litrank.applyReply(broken, { collection: env.collection("ML reading"), recommended: env.collection("Recommended"), collectionName: "Recommended" }),
		/could not be used: create\[\d+\] has no item data with an itemType/,
	);
	assert.deepEqual(env.writes, []);
});

test("the whole run: progress while litrank runs, then the summary with litrank's own and the counts", async () => {
	const { env, window, Litrank } = setup();
	const reply = readFixture("reply.json");
	const counts = await Litrank.recommend(window, env.collection("ML reading"));
	assert.ok(counts);
	assert.deepEqual(env.alerts, []);
	const [running, summary] = env.progressWindows;
	assert.match(running.headlines[0], /litrank is ranking examples\/icml2026 for “ML reading”/);
	assert.equal(running.shown, true);
	assert.equal(running.closed, true);
	assert.equal(summary.headlines[0], `litrank: ${reply.picks.length} picks in ML reading/Recommended`);
	assert.equal(summary.descriptions[0], reply.summary);
	assert.match(summary.descriptions[1], new RegExp(`^Written to Zotero: ${reply.create.length} new, `));
	assert.match(summary.descriptions[1], /skipped \(not litrank's\)/);
	assert.ok(summary.closeTimer > 0);
	assert.equal(Litrank.state.running.size, 0);
	assert.deepEqual(env.l10nErrors, [], "every message went through the window's Fluent");
	assert.deepEqual(env.errors, []);
});
