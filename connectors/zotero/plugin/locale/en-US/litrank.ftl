# litrank for Zotero: every string the plugin shows.
# The messages with a value are also kept, word for word, as English fallbacks in litrank.js
# (tests/plugin/ checks that both say the same).

## The collection context menu

litrank-menu-recommend =
    .label = Recommend papers for this collection…

## The dialog (two short prompts)

litrank-dialog-title = Recommend papers with litrank
litrank-dialog-source = Candidate papers for “{ $collection }”: a source such as openreview:ICML.cc/2026/Conference, arxiv:cs.LG, or the full path of a file or folder.
litrank-dialog-top = How many picks for “{ $collection }”? They go into { $path }.
litrank-dialog-top-invalid = “{ $value }” is not a number of picks: give a whole number, 1 or more.

## The progress window

litrank-progress-running = litrank is ranking { $source } for “{ $collection }”…
litrank-progress-done = litrank: { $picks } picks in { $path }
litrank-progress-counts = Written to Zotero: { $created } new, { $updated } updated, { $removed } taken out of the collection, { $unchanged } unchanged; { $skipped } skipped (not litrank's).
litrank-progress-ignored = { $ignored } items named in litrank's answer were not found or are in the trash, and were left alone.

## Errors

litrank-error-title = litrank
litrank-error-no-collection = Right-click a collection (not a library, a saved search or the trash) to get recommendations for it.
litrank-error-busy = litrank is already running for “{ $collection }”.
litrank-error-python-missing = The Python interpreter “{ $python }” was not found. Give its full path in Zotero's Settings → litrank (the preference extensions.litrank.python).
litrank-error-timeout = litrank did not answer within { $seconds } s. Raise the time limit in Zotero's Settings → litrank if your candidate source is large.
litrank-error-failed = litrank failed: { $message }
litrank-error-exit = litrank stopped with exit code { $code } and said nothing.
litrank-error-not-json = litrank's answer was not JSON.
litrank-error-version = litrank answered with contract version { $version }, and this plugin reads version 1: build the plugin again with the litrank you run (litrank zotero-plugin build).
litrank-error-bad-reply = litrank's answer could not be used: { $message }
litrank-error-apply = The picks could not all be written to Zotero: { $message }

## Settings (Zotero 7 and later: Settings → litrank)

litrank-prefs-title = litrank
litrank-prefs-intro = Right-click a collection and choose “Recommend papers for this collection…”. The picks go into a child collection, tagged litrank; tag one litrank:liked, drag it out of that collection or move it to the trash, and the next run learns from it.
litrank-prefs-python = Python interpreter:
litrank-prefs-python-help = The full path of the Python that has litrank installed, e.g. /Users/you/venvs/litrank/bin/python or C:\Users\you\AppData\Local\Programs\Python\Python312\python.exe. Zotero does not see your shell's PATH.
litrank-prefs-collection-name = Name of the child collection for the picks:
litrank-prefs-top = Number of picks (suggested in the dialog):
litrank-prefs-timeout = Time limit for one run, in seconds:
