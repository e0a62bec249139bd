#!/usr/bin/env nextflow
/*
 * biossd study — entry workflow.
 *
 * What is studied lives here in study/: the tool catalogue (catalogue/*.yaml), the experiment
 * matrix (params in nextflow.config and nextflow_schema.json) and the profiles (ssd, hdd, test).
 * How it runs lives in ../nextflow/: modules, workflows and configs.
 *
 *   nextflow run study -profile test              # whole study, small inputs, this machine
 *   nextflow run study -profile ssd --outdir R    # on a host whose scratch disk is an SSD
 *   nextflow run study -profile test --experiment sort_memory   # one of the four related experiments
 */
nextflow.enable.dsl = 2

include { BIOSSD } from '../nextflow/workflows/biossd'
include { studyFinish } from '../nextflow/subworkflows/local/study_lifecycle'
include { EXPERIMENTS } from '../nextflow/workflows/experiments'

// --experiment NAME[,NAME] (or all) runs the four related experiments instead of the
// study (study/experiments/, at --experiment_size).
workflow {
    // --publish_mode link hard-links each run directory into --outdir (nothing is written while
    // the next run measures); that needs --outdir on the work directory's file system.
    if( params.publish_mode == 'link' && !workflow.stubRun ) {
        def out = file(params.outdir)
        def existing = { path -> while( !path.exists() ) path = path.parent; path }
        def dev = { path -> java.nio.file.Files.getAttribute(existing(path), 'unix:dev') }
        if( dev(out) != dev(workflow.workDir) )
            error "--publish_mode link: --outdir ${out} is not on the file system of the work directory ${workflow.workDir}; use --publish_mode copy or another --outdir"
    }
    if( params.experiment )
        EXPERIMENTS()
    else
        BIOSSD()
}

// At the end, however the run ended: `biossd study finish` (provenance, the session's row, the
// outcomes, the emulated storage classes taken down).
workflow.onComplete {
    studyFinish()
}
