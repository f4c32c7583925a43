"""The vocabulary every layer speaks: the trace (`trace`), errors and exit codes (`errors`),
text and sentence handling (`text`, `layout`), entity names (`entities`), guarded JSON files
(`io`) and the version. It imports nothing else of the package."""
