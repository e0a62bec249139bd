/*
 * FEATURES — the features table of every run of this invocation (biossd features). A run whose
 * files are damaged (checked against its manifest's checksums) is left out, not allowed to stop
 * the table: it is listed in features_skipped.tsv and in the log.
 */
process FEATURES {
    tag "${run_dirs instanceof List ? run_dirs.size() : 1} runs"
    label 'process_single'

    input:
    path run_dirs, stageAs: 'runs/run?'

    output:
    path 'features.csv', emit: table
    path 'features_skipped.tsv', emit: skipped
    path 'versions.yml', emit: versions

    script:
    """
    # Exit 1 means "some runs were skipped" (listed); anything else is a failure.
    biossd features --keep-going --skipped features_skipped.tsv runs -o features.csv || [ \$? -eq 1 ]
    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        biossd: \$(biossd --version | sed 's/biossd //')
    END_VERSIONS
    """

    stub:
    """
    touch features.csv features_skipped.tsv
    echo '"${task.process}": {biossd: stub}' > versions.yml
    """
}
