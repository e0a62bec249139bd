/*
 * FEATURES — the features table of every run of this invocation (biossd features).
 */
process FEATURES {
    label 'process_single'
    publishDir "${params.outdir}", mode: 'copy', pattern: 'features.csv'

    input:
    path run_dirs, stageAs: 'runs/run?'

    output:
    path 'features.csv', emit: table
    path 'versions.yml', emit: versions

    script:
    """
    biossd features runs -o features.csv
    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        biossd: \$(biossd --version | sed 's/biossd //')
    END_VERSIONS
    """

    stub:
    """
    touch features.csv
    echo '"${task.process}": {biossd: stub}' > versions.yml
    """
}
