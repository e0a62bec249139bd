// PROFILE: described in meta.yml beside this file (what it does, the meta keys it reads, its inputs and outputs)
include { shellQuote } from '../../../lib/shell'

process PROFILE {
    tag "${meta.tool} ${meta.storage} ${meta.mem} x${meta.scale} #${meta.rep}${meta.probe ? ' ' + meta.probe : ''}"
    label 'profiled'
    maxForks workflow.stubRun ? 64 : 1

    input:
    tuple val(meta), path(input_dir, stageAs: 'input'), val(scratch_root), path(device_record, stageAs: 'device.json'), val(version), val(image_ref), val(biossd_version)

    output:
    tuple val(meta), path('run'), emit: run_dir
    path 'versions.yml'         , emit: versions

    script:
    def q       = { value -> shellQuote(value) }
    def scratch = scratch_root ? q("${scratch_root}/biossd-${task.hash ?: task.index}") : 'scratch'
    def labels  = meta.labels.collect { k, v -> "--label ${q("${k}=${v}")}" }.join(' ')
    def args    = [task.ext.args ?: '', meta.probe == 'cachegrind' ? '--cachegrind' : '', meta.read_code ? '--read-code' : ''].findAll().join(' ')
    def engine_name = task.ext.engine ?: ''
    def engine  = engine_name ? "--container ${q(engine_name)}" : ''
    def engineLabel = engine_name ? "--label ${q("container_engine=${engine_name}")}" : ''
    def tool    = q(meta.tool)
    def mem     = meta.probe ? 'none' : q(meta.mem_bytes != null ? meta.mem_bytes.toString() : meta.mem)
    def uncapped = meta.probe ? '--uncapped' : ''
    def sets    = (meta.settings ?: [:]).collect { k, v -> "--set ${q("${k}=${v}")}" }.join(' ')
    def setLabels = (meta.settings ?: [:]).collect { k, v -> "--label ${q("setting.${k}=${v}")}" }.join(' ')
    """
    version=${q(version)}
    image=()
    image_ref=${q(image_ref)}
    if [ -n ${q(engine_name)} ]; then
        image=(--image "\$image_ref")
    fi
    biossd catalogue run ${tool} --input input --scratch ${scratch} --out run --hold-host-lock \
        --mem ${mem} ${uncapped} ${sets} ${engine} ${args} \
        ${labels} ${setLabels} ${engineLabel} --label "tool_version=\$version" --label ${q("input_bytes=${meta.input_bytes}")} --tool-version "\$version" \
        --device-record device.json "\${image[@]}"

    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        biossd: ${biossd_version}
        ${meta.tool}: \$version
        ${meta.tool}_image: "\$image_ref"
    END_VERSIONS
    """

    stub:
    """
    mkdir run
    echo '"${task.process}": {${meta.tool}: stub}' > versions.yml
    """
}
