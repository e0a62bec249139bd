// FEATURES: described in meta.yml beside this file (what it does, the meta keys it reads, its inputs and outputs)
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
