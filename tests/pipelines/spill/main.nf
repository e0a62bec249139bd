#!/usr/bin/env nextflow
/*
 * A pipeline whose tasks spill or page under their memory, written as an nf-core pipeline is, for
 * biossd's "profile your own pipeline" tests: numbers made and split in chunks, each chunk sorted
 * by GNU sort with a small buffer (it spills sorted runs to temporary files and merges them), the
 * chunks merged, and a table grown in memory past what its first attempt asks for (under biossd's
 * cap the first attempt is killed and Nextflow retries it with twice the memory). It knows
 * nothing of biossd.
 *
 *   nextflow run tests/pipelines/spill --count 2000000 --chunks 2 --outdir out
 */
nextflow.enable.dsl = 2

include { MAKE_NUMBERS } from './modules/local/make_numbers/main'
include { SORT_CHUNK   } from './modules/local/sort_chunk/main'
include { MERGE_SORTED } from './modules/local/merge_sorted/main'
include { GROW_TABLE   } from './modules/local/grow_table/main'

workflow {
    MAKE_NUMBERS(Channel.of([id: 'numbers', count: params.count, chunks: params.chunks]))
    chunks = MAKE_NUMBERS.out.chunks.transpose().map { meta, chunk -> [meta + [id: chunk.baseName], chunk] }
    SORT_CHUNK(chunks)
    MERGE_SORTED(SORT_CHUNK.out.sorted.map { meta, f -> f }.collect().map { files -> [[id: 'merged'], files] })
    GROW_TABLE(Channel.of([id: 'table', mib: params.table_mib]))
}
