/*
 * Quoting for the shell, once for every module: a value in single quotes, each of its own single
 * quotes closed, escaped and reopened, so a path with spaces or metacharacters stays one word.
 */
def shellQuote(value) {
    "'" + value.toString().replace("'", "'\\''") + "'"
}
