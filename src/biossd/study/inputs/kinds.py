"""The synthetic input kinds a catalogue entry may name (its ``input``) and what each holds.

Their generators are in :mod:`biossd.study.inputs.data`, which needs NumPy; this list does not,
so that checking a catalogue entry (in every profiled run's process) does not import it."""

#: Kind name -> what a generated input of that kind holds.
DESCRIPTIONS = {
    "bam": "unsorted aligned 100 bp reads (BAM) on a 1 Mbp two-contig genome",
    "genome": "reference genome (FASTA), GC 41%, interspersed repeats",
    "reads": "paired 100 bp reads (FASTQ) with a per-read truth file, and their genome",
    "vcf": "known-sites VCF (SNVs) and its genome, for base recalibration",
    "proteins": "protein families (FASTA) with the family of each sequence",
    "expression": "expression matrix (Cluster 3.0 format) with planted clusters",
    "flowgrams": "454 Titanium flowgrams (AmpliconNoise .dat) and their true sequences",
    "promoters": "promoter sequences (FASTA) with planted motif instances",
    "genesets": "ErmineJ gene annotations with GO terms and gene scores",
    "rnaseq": "spliced RNA-seq reads (FASTQ), gene models (GTF) and genome",
}

#: The record of a synthetic input (``biossd data synth``) and of one prepared from a published
#: data set (``biossd data prepare``); every study input carries one: what made it, each file's sha256.
SYNTH_RECORD = "synth.json"
PREPARED_RECORD = "prepared.json"
INPUT_RECORDS = (SYNTH_RECORD, PREPARED_RECORD)
