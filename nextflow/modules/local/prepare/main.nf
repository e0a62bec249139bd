/*
 * PREPARE — a tool's unprofiled preparation of one input (indexes, dictionaries: the catalogue
 * entry's `stage.prepare`), done once per (tool, input) and cached by Nextflow, not once per run:
 * every PROFILE task of the pair copies the prepared directory into its scratch on the device
 * under study (`biossd catalogue run`), so the tool's reads still hit that device.
 */
include { shellQuote } from '../../../lib/shell'

process PREPARE {
    tag "${tool} ${input_id}"
    label 'process_single'

    input:
    tuple val(tool), val(input_id), path(input_dir, stageAs: 'input')

    output:
    tuple val(tool), val(input_id), path('prepared'), env(input_bytes), emit: prepared

    script:
    def q = { value -> shellQuote(value) }
    """
    input_bytes=\$(biossd catalogue prepare ${q(tool)} --input input --out prepared --hold-host-lock)
    """

    stub:
    """
    mkdir prepared && input_bytes=0
    """
}
