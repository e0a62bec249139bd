/*
 * The plan a result folder now holds (src/biossd/study/outdir.py), written whole under a temporary
 * name and renamed: a later study or experiment of another plan into the folder is refused, naming
 * what differs, unless it replaces its results (--replace_results true), which first moves the
 * other plan's results to <outdir>.replaced-<UTC time> beside it (nothing deleted).
 */
def writePlanRecord(String outdir, Map record) {
    if( params.replace_results in [true, 'true'] )
        setAsideOtherPlan(outdir, record)
    def info = file("${outdir}/pipeline_info")
    info.mkdirs()
    def partial = file("${info}/.plan.json.partial")
    partial.text = groovy.json.JsonOutput.prettyPrint(groovy.json.JsonOutput.toJson(record)) + "\n"
    java.nio.file.Files.move(partial, file("${info}/plan.json"), java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                             java.nio.file.StandardCopyOption.ATOMIC_MOVE)
    return info
}

def setAsideOtherPlan(String outdir, Map record) {
    def argv = ['biossd', 'study', 'set-aside', '--outdir', outdir, '--record', groovy.json.JsonOutput.toJson(record),
                '--keep', workflow.launchDir.toString(), '--keep', workflow.workDir.toString()]
    def out = new StringBuilder(), err = new StringBuilder()
    def proc = argv.execute()
    proc.waitForProcessOutput(out, err)
    if( proc.exitValue() != 0 )
        error "--replace_results: ${err.toString().trim() ?: 'biossd study set-aside failed (is biossd on PATH? run `make install`)'}"
    if( out.toString().trim() )
        log.warn "biossd: --replace_results: ${outdir} held another plan's results; moved to ${out.toString().trim()}"
}
