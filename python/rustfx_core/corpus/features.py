"""Feature sets: the output columns of a corpus job, one FeatureSpec each."""

import json
import os

from rustfx_core.corpus import arrow
from rustfx_core.spec import FeatureSpec

#: Ready-made feature sets (--spec NAME): column name -> FeatureSpec JSON.
NAMED_FEATURE_SETS = {
    # EMBER2024's (thrember, feature version 3) 2568-d vector.
    "ember2024": {"ember_features": {"extractor": "ember_features"}},
    # EMBER 2018's byte groups: ByteHistogram, ByteEntropyHistogram, StringExtractor.
    "ember2018-bytes": {
        "byte_histogram": {"extractor": "byte_histogram"},
        "byte_entropy_histogram": {"extractor": "byte_entropy_histogram"},
        "string_features": {"extractor": "string_features"},
    },
}


class FeatureSet:
    """Named FeatureSpecs, one output column each: {"features": {column:
    spec}}. Built from a FeatureSet, a ready-made name (NAMED_FEATURE_SETS),
    a FeatureSpec (its extractor names the column), a dict of either JSON
    form, JSON text of either, or a path to a JSON file of either. A bad
    spec is a ValueError with the core's message."""

    def __init__(self, features):
        if not features:
            raise ValueError("a feature set needs at least one feature")
        self.features = {}
        for column, spec in features.items():
            if column in arrow.BASE_COLUMNS or not isinstance(column, str):
                raise ValueError(f"feature column name {column!r} is reserved or not a string")
            self.features[column] = FeatureSpec.from_json(spec)

    @classmethod
    def load(cls, value):
        if isinstance(value, FeatureSet):
            return value
        if isinstance(value, FeatureSpec):
            return cls({value.extractor: value})
        if isinstance(value, str):
            if value in NAMED_FEATURE_SETS:
                return cls(NAMED_FEATURE_SETS[value])
            if not value.lstrip().startswith("{"):
                if not os.path.isfile(value):
                    raise ValueError(
                        f"--spec {value!r} is neither a ready-made feature set "
                        f"({', '.join(NAMED_FEATURE_SETS)}) nor a JSON file")
                with open(value) as f:
                    value = f.read()
            value = json.loads(value)
        if isinstance(value, dict) and "features" in value:
            return cls(value["features"])
        if isinstance(value, dict) and "extractor" in value:
            spec = FeatureSpec.from_json(value)
            return cls({spec.extractor: spec})
        raise ValueError('a feature set is {"features": {column: spec, ...}} or one '
                         'FeatureSpec {"extractor": ..., "params": ...}')

    def to_dict(self):
        return {"features": {c: s.to_dict() for c, s in self.features.items()}}

    def to_json(self):
        return json.dumps(self.to_dict(), sort_keys=True)

    def __eq__(self, other):
        return isinstance(other, FeatureSet) and other.features == self.features

    def arrow_schema(self):
        """The rows' pyarrow schema: the base columns, then each feature's
        (rustfx_core.corpus.arrow), the feature set in its metadata."""
        return arrow.schema(self.features, self.to_json())
