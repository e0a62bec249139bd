#!/usr/bin/env nextflow
/*
 * A small DNA-seq pipeline written as an nf-core pipeline is (modules, meta, publishDir), for
 * biossd's "profile your own pipeline" tests: bwa index -> bwa mem -> samtools sort ->
 * samtools index -> bcftools mpileup | call. It knows nothing of biossd.
 *
 *   nextflow run tests/pipelines/dnaseq --genome genome.fa --reads 'dir/*_{1,2}.fq' --outdir out
 */
nextflow.enable.dsl = 2

include { BWA_INDEX      } from './modules/local/bwa_index/main'
include { BWA_MEM        } from './modules/local/bwa_mem/main'
include { SAMTOOLS_SORT  } from './modules/local/samtools_sort/main'
include { SAMTOOLS_INDEX } from './modules/local/samtools_index/main'
include { BCFTOOLS_CALL  } from './modules/local/bcftools_call/main'

workflow {
    genome = file(params.genome, checkIfExists: true)
    reads = Channel.fromFilePairs(params.reads, checkIfExists: true)
        .map { id, files -> [[id: id], files] }
    BWA_INDEX(genome)
    BWA_MEM(reads, BWA_INDEX.out.index)
    SAMTOOLS_SORT(BWA_MEM.out.bam)
    SAMTOOLS_INDEX(SAMTOOLS_SORT.out.bam)
    BCFTOOLS_CALL(SAMTOOLS_SORT.out.bam.join(SAMTOOLS_INDEX.out.bai), genome)
}
