/*
 * REPORT — the notebooks (papermill) over this invocation's features table, into
 * OUTDIR/report/ (figures and executed notebooks). Skipped with --skip_report.
 */
process REPORT {
    label 'process_single'
    publishDir "${params.outdir}", mode: 'copy', pattern: 'results/report/**', saveAs: { name -> name - 'results/' }

    input:
    path features_csv

    output:
    path 'results/report/**', emit: report
    path 'versions.yml'     , emit: versions

    script:
    """
    mkdir -p results && cp ${features_csv} results/features.csv
    biossd report results > /dev/null
    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        biossd: \$(biossd --version | sed 's/biossd //')
    END_VERSIONS
    """

    stub:
    """
    mkdir -p results/report/figures && touch results/report/figures/stub.png
    echo '"${task.process}": {biossd: stub}' > versions.yml
    """
}
