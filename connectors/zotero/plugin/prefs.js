pref("extensions.litrank.python", "python3");
pref("extensions.litrank.collectionName", "Recommended");
pref("extensions.litrank.top", 20);
pref("extensions.litrank.timeoutSeconds", 600);
pref("extensions.litrank.sources", "{}");
