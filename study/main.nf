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
 */
nextflow.enable.dsl = 2

include { BIOSSD } from '../nextflow/workflows/biossd'

workflow {
    BIOSSD()
}
