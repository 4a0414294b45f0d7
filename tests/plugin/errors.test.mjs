// When litrank does not answer, fails, answers something else than JSON, or cannot be found:
// one alert that says why (and where to fix it), the progress window closed, nothing written.
import { test } from "node:test";
import assert from "node:assert/strict";

import { makeEnvironment, readFixture } from "./fake-zotero.mjs";

async function run(subprocess, options = {}) {
	const env = makeEnvironment({ answers: ["examples/icml2026", "5"], subprocess, ...options });
	const window = env.openWindow();
	const Litrank = env.loadPlugin();
	Litrank.startup();
	const result = await Litrank.recommend(window, env.collection("ML reading"));
	return { env, Litrank, result };
}

function assertFailedCleanly(env, result) {
	assert.equal(result, null);
	assert.equal(env.alerts.length, 1);
	assert.equal(env.alerts[0].title, "litrank");
	assert.deepEqual(env.writes, [], "nothing written to Zotero");
	assert.ok(env.progressWindows.every(progress => !progress.shown || progress.closed), "the progress window is closed");
	assert.deepEqual(env.l10nErrors, [], "the message went through the window's Fluent");
}

test("a litrank that never answers is killed after extensions.litrank.timeoutSeconds and the user is told; meanwhile a second run of the same collection is refused", async () => {
	const env = makeEnvironment({ answers: ["examples/icml2026", "5"], subprocess: { hang: true } });
	const window = env.openWindow();
	const Litrank = env.loadPlugin();
	Litrank.startup();
	const ml = env.collection("ML reading");
	const running = Litrank.recommend(window, ml);
	while (!env.subprocess.calls.stdinClosed) {
		await new Promise(resolve => setImmediate(resolve));
	}
	assert.equal(await Litrank.recommend(window, ml), null);
	assert.equal(env.alerts[0].message, "litrank is already running for “ML reading”.");
	env.alerts.length = 0;
	const result = await running;
	assertFailedCleanly(env, result);
	assert.equal(env.subprocess.calls.killed, true);
	assert.ok(env.timers.includes(600 * 1000), "the default time limit is 600 s");
	assert.equal(env.alerts[0].message, "litrank did not answer within 600 s. Raise the time limit in Zotero's Settings → litrank if your candidate source is large.");
	assert.equal(Litrank.state.running.size, 0, "a later run is possible");

	const quick = await run({ hang: true }, { prefs: { "extensions.litrank.timeoutSeconds": 30 } });
	assert.ok(quick.env.timers.includes(30 * 1000));
	assert.match(quick.env.alerts[0].message, /^litrank did not answer within 30 s\./);
});

test("a non-zero exit with {v: 1, error} shows error.message, one line", async () => {
	const { env, result } = await run({
		respond: () => ({
			stdout: JSON.stringify({ v: 1, error: { code: "source_failed", message: "openreview:NoSuch.cc/2026: no such venue\n(details)" } }),
			stderr: "Traceback: not this\n",
			exitCode: 2,
		}),
	});
	assertFailedCleanly(env, result);
	assert.equal(env.alerts[0].message, "litrank failed: openreview:NoSuch.cc/2026: no such venue");
});

test("stdout that is not JSON: the first line of stderr (the exception of a Python traceback)", async () => {
	const { env, result } = await run({
		respond: () => ({ stdout: "", stderr: "\n/usr/bin/python3: No module named recommender\nmore\n", exitCode: 1 }),
	});
	assertFailedCleanly(env, result);
	assert.equal(env.alerts[0].message, "litrank failed: /usr/bin/python3: No module named recommender");

	const traceback = await run({
		respond: () => ({
			stdout: "",
			stderr: "Traceback (most recent call last):\n  File \"<frozen runpy>\", line 198, in _run_module_as_main\nModuleNotFoundError: No module named 'bibtexparser'\n",
			exitCode: 1,
		}),
	});
	assertFailedCleanly(traceback.env, traceback.result);
	assert.equal(traceback.env.alerts[0].message, "litrank failed: ModuleNotFoundError: No module named 'bibtexparser'", "a traceback's last line, not its first");

	const zero = await run({ respond: () => ({ stdout: "<html>not json</html>", stderr: "", exitCode: 0 }) });
	assertFailedCleanly(zero.env, zero.result);
	assert.equal(zero.env.alerts[0].message, "litrank's answer was not JSON.");

	const silent = await run({ respond: () => ({ stdout: "", stderr: "", exitCode: 3 }) });
	assertFailedCleanly(silent.env, silent.result);
	assert.equal(silent.env.alerts[0].message, "litrank stopped with exit code 3 and said nothing.");
});

test("an interpreter that is not there: the alert names it and the preference to set; nothing is started", async () => {
	const { env, result } = await run({ found: false }, { prefs: { "extensions.litrank.python": "/Users/me/venv/bin/python" } });
	assertFailedCleanly(env, result);
	assert.deepEqual(env.subprocess.calls.pathSearch, ["/Users/me/venv/bin/python"]);
	assert.equal(env.subprocess.calls.call.length, 0);
	assert.match(env.alerts[0].message, /“\/Users\/me\/venv\/bin\/python” was not found/);
	assert.match(env.alerts[0].message, /extensions\.litrank\.python/);

	const bad = await run({ badExecutable: true });
	assertFailedCleanly(bad.env, bad.result);
	assert.match(bad.env.alerts[0].message, /The Python interpreter “python3” was not found\..*extensions\.litrank\.python/);
});

test("a reply of another contract version is refused; an error in a reply with exit 0 is still an error", async () => {
	const { env, result } = await run({ reply: { ...readFixture("reply.json"), v: 2 } });
	assertFailedCleanly(env, result);
	assert.match(env.alerts[0].message, /contract version 2, and this plugin reads version 1/);

	const failed = await run({ reply: { v: 1, error: { code: "bad_request", message: "'top' must be a positive whole number" } } });
	assertFailedCleanly(failed.env, failed.result);
	assert.equal(failed.env.alerts[0].message, "litrank failed: 'top' must be a positive whole number");
});

test("Subprocess from Subprocess.jsm when the ES module is missing; no collection: said, nothing run", async () => {
	const { env, result } = await run({ reply: readFixture("reply.json") }, { esm: false });
	assert.ok(result, JSON.stringify(env.alerts));
	assert.equal(env.subprocess.calls.call.length, 1);

	const none = makeEnvironment({ answers: ["x", "5"] });
	const window = none.openWindow();
	const Litrank = none.loadPlugin();
	assert.equal(await Litrank.recommend(window, null), null);
	assert.match(none.alerts[0].message, /^Right-click a collection/);
	assert.equal(none.prompts.length, 0);
});
