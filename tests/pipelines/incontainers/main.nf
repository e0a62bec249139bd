#!/usr/bin/env nextflow
/*
 * An nf-core-style pipeline whose tools run in their containers, for biossd's "profile your own
 * pipeline as you run it" tests: each sample's BAM sorted and indexed by samtools in the
 * catalogue's samtools image. It knows nothing of biossd.
 *
 *   nextflow run tests/pipelines/incontainers -profile docker --bams 'in/*.bam' --outdir out
 */
nextflow.enable.dsl = 2

include { SAMTOOLS_SORT  } from './modules/local/samtools_sort/main'
include { SAMTOOLS_INDEX } from './modules/local/samtools_index/main'

workflow {
    bams = Channel.fromPath(params.bams, checkIfExists: true).map { f -> [[id: f.baseName], f] }
    SAMTOOLS_SORT(bams)
    SAMTOOLS_INDEX(SAMTOOLS_SORT.out.bam)
    SAMTOOLS_SORT.out.versions.mix(SAMTOOLS_INDEX.out.versions).unique().collectFile(
        name: 'versions.yml', storeDir: "${params.outdir}/pipeline_info")
}
