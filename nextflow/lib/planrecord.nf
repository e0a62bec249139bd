/*
 * The plan a result folder now holds (src/biossd/study/outdir.py), written whole under a temporary
 * name and renamed: a later study or experiment of another plan into the folder is refused, naming
 * what differs, unless it replaces its results.
 */
def writePlanRecord(String outdir, Map record) {
    def info = file("${outdir}/pipeline_info")
    info.mkdirs()
    def partial = file("${info}/.plan.json.partial")
    partial.text = groovy.json.JsonOutput.prettyPrint(groovy.json.JsonOutput.toJson(record)) + "\n"
    java.nio.file.Files.move(partial, file("${info}/plan.json"), java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                             java.nio.file.StandardCopyOption.ATOMIC_MOVE)
    return info
}
