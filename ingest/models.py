"""PDB polls, the entries they saw and the chains extracted from them."""

from __future__ import annotations

from django.db import models

from comparna.models import RunRecord
from comparna.rna.stockholm import rename_sequence


class PollRun(RunRecord):
    """One poll of the RCSB for entries released in a window, with progress and outcome shown to users.

    Progress: ``done`` of ``total`` new entries processed.
    """

    since = models.DateField()
    until = models.DateField()
    backfill = models.BooleanField(
        default=False, help_text="Before the benchmark start: builds the novelty reference set."
    )
    found = models.PositiveIntegerField(default=0)
    new = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    targets_created = models.PositiveIntegerField(default=0)

    class Meta(RunRecord.Meta):
        pass

    def __str__(self) -> str:
        return f"poll {self.since}..{self.until} [{self.status}]"


class PdbEntry(models.Model):
    """One PDB entry as CompaRNA processed it; entries in a final state are skipped by later polls."""

    class Status(models.TextChoices):
        OK = "ok"
        GONE = "gone", "removed before download (HTTP 404)"
        DOWNLOAD_FAILED = "download_failed", "download failed (retried next poll)"
        UNREADABLE = "unreadable", "not a readable structure file"

    pdb_id = models.CharField(max_length=8, unique=True)
    poll = models.ForeignKey(PollRun, on_delete=models.SET_NULL, null=True, related_name="entries")
    status = models.CharField(max_length=24, choices=Status.choices)
    reason = models.TextField(blank=True)
    path = models.CharField(max_length=500, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    model_count = models.PositiveIntegerField(default=0)
    seconds = models.JSONField(default=dict, blank=True)
    processed_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["pdb_id"]

    def __str__(self) -> str:
        return f"{self.pdb_id} [{self.status}]"


class PdbChain(models.Model):
    """One nucleic-acid chain of an entry: why it is or is not a benchmark target."""

    class Role(models.TextChoices):
        REFERENCE = "reference", "novelty reference (backfill)"
        TARGET = "target", "benchmark target"
        SIMILAR = "similar", "similar to a known chain"
        EXCLUDED = "excluded", "excluded"

    entry = models.ForeignKey(PdbEntry, on_delete=models.CASCADE, related_name="chains")
    chain_id = models.CharField(max_length=8)
    sequence = models.TextField()
    length = models.PositiveIntegerField()
    role = models.CharField(max_length=16, choices=Role.choices)
    reason = models.TextField(blank=True)
    similar_to = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True)
    target = models.OneToOneField(
        "comparna.Target", on_delete=models.SET_NULL, null=True, blank=True, related_name="pdb_chain"
    )
    author_numbers = models.JSONField(default=list)

    class Meta:
        ordering = ["entry", "chain_id"]
        constraints = [models.UniqueConstraint(fields=["entry", "chain_id"], name="pdbchain_unique_chain")]

    def __str__(self) -> str:
        return f"{self.entry.pdb_id}_{self.chain_id}"

    @property
    def known(self) -> bool:
        """Part of the novelty reference set: backfill chains and chains already benchmarked."""
        return self.role in (self.Role.REFERENCE, self.Role.TARGET)


class FamilyAssignment(models.Model):
    """The Rfam family of a target under one Rfam version (cmscan's best hit covering ≥ 80 % of it).

    A row with an empty accession records that no family was found; re-running under a new Rfam version
    adds a row, old ones stay for the record.
    """

    target = models.ForeignKey("comparna.Target", on_delete=models.CASCADE, related_name="family_assignments")
    rfam_version = models.CharField(max_length=200)
    accession = models.CharField(max_length=32, blank=True)
    family_id = models.CharField(max_length=100, blank=True)
    evalue = models.FloatField(null=True, blank=True)
    score = models.FloatField(null=True, blank=True)
    coverage = models.FloatField(null=True, blank=True)
    assigned_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-assigned_at"]
        constraints = [
            models.UniqueConstraint(fields=["target", "rfam_version"], name="family_unique_version")
        ]

    def __str__(self) -> str:
        return f"{self.target}: {self.accession or 'no family'} ({self.rfam_version})"


class ComparativeInput(models.Model):
    """A stored (seed) or (20) input of a target, so a comparative prediction can be reproduced exactly."""

    class Kind(models.TextChoices):
        SEED = "seed", "(seed): all seed sequences + the query"
        TWENTY = "20", "(20): the query + 19 seed sequences with 65-95 % identity"

    target = models.ForeignKey("comparna.Target", on_delete=models.CASCADE, related_name="comparative_inputs")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    rfam_version = models.CharField(max_length=200)
    accession = models.CharField(max_length=32)
    query_name = models.CharField(max_length=100)
    random_seed = models.BigIntegerField(null=True, blank=True)
    sequences = models.TextField(help_text="FASTA of the input collection (query included).")
    alignment = models.TextField(help_text="Stockholm alignment of the collection by cmalign.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["target", "kind", "rfam_version"], name="comparativeinput_unique")
        ]

    def job_alignment(self, *, query_name: str = "query") -> str:
        """The stored alignment with the query row renamed to the name comparative specs use (``--query``)."""
        return rename_sequence(self.alignment, self.query_name, query_name)
