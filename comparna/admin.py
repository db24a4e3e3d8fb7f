"""Admin for datasets and targets (read-mostly: these rows come from imports)."""

from django.contrib import admin

from comparna.models import Dataset, DatasetEntry, ImportRun, ReferenceStructure, Score, Subset, Target


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "kind", "version", "updated_at")


@admin.register(Subset)
class SubsetAdmin(admin.ModelAdmin):
    list_display = ("dataset", "slug", "name", "order")
    list_filter = ("dataset",)


class ReferenceInline(admin.TabularInline):
    model = ReferenceStructure
    extra = 0
    readonly_fields = ("definition", "pairs", "n_pairs", "pseudoknotted", "has_multiplets")


@admin.register(Target)
class TargetAdmin(admin.ModelAdmin):
    list_display = ("source_id", "dataset", "length", "source_database", "rna_class", "release_date")
    list_filter = ("dataset", "source_database")
    search_fields = ("source_id", "rna_class", "organism", "pdb_id")
    inlines = [ReferenceInline]


@admin.register(Score)
class ScoreAdmin(admin.ModelAdmin):
    list_display = ("prediction", "definition", "tp", "fn", "fp", "fp_compatible", "mcc")
    list_filter = ("definition",)


@admin.register(ImportRun)
class ImportRunAdmin(admin.ModelAdmin):
    list_display = ("kind", "source", "status", "started_at", "finished_at", "done", "total")


@admin.register(DatasetEntry)
class DatasetEntryAdmin(admin.ModelAdmin):
    """Every entry read from a dataset's source and why it is or is not a target (written by imports)."""

    list_display = ("source_id", "dataset", "family", "outcome", "representative", "detail")
    list_filter = ("dataset", "outcome", "family")
    search_fields = ("source_id", "representative")
    readonly_fields = (
        "dataset", "source_id", "sequence", "family", "outcome", "detail", "representative", "target"
    )
