"""The base of litrank's model pieces: scikit-learn's estimator contract without importing it.

Importing scikit-learn takes 0.6-0.7 s (``sklearn.base`` pulls in ``scipy.stats``), a quarter of
a whole ``litrank rank -c collection.litrank`` run, which otherwise needs nothing from it: the
index holds the fitted vocabularies and the library is counted with numpy. :class:`Estimator`
gives the same contract as ``sklearn.base.BaseEstimator`` (every parameter an argument of
``__init__`` stored under its own name; ``get_params`` / ``set_params``, nested ``a__b``
names; a ``repr`` of the parameters that differ from their defaults), so ``sklearn.base.clone``,
grid searches and pipelines take litrank's estimators as they take scikit-learn's.
"""
from __future__ import annotations

import inspect


class Estimator:
    """Parameters introspected from ``__init__``, as in scikit-learn's ``BaseEstimator``."""

    @classmethod
    def _get_param_names(cls) -> list[str]:
        if cls.__init__ is object.__init__:
            return []
        parameters = [p for p in inspect.signature(cls.__init__).parameters.values()
                      if p.name != "self" and p.kind != p.VAR_KEYWORD]
        if any(p.kind == p.VAR_POSITIONAL for p in parameters):
            raise RuntimeError(f"{cls.__name__}: estimators name every parameter in __init__ (no *args)")
        return sorted(p.name for p in parameters)

    def get_params(self, deep: bool = True) -> dict:
        """The parameters by name; with ``deep``, those of parameters that are estimators
        themselves too, as ``name__parameter``."""
        params = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                params.update((f"{name}__{key}", inner) for key, inner in value.get_params().items())
            params[name] = value
        return params

    def set_params(self, **params) -> "Estimator":
        """Set parameters by name (``name__parameter`` for a nested estimator's); returns self.

        Raises
        ------
        ValueError
            For a name that is not a parameter.
        """
        valid = self.get_params(deep=True)
        nested: dict[str, dict] = {}
        for key, value in params.items():
            name, delimiter, inner = key.partition("__")
            if name not in valid:
                raise ValueError(f"invalid parameter {name!r} for {type(self).__name__}; "
                                 f"valid parameters are {self._get_param_names()!r}")
            if delimiter:
                nested.setdefault(name, {})[inner] = value
            else:
                setattr(self, name, value)
                valid[name] = value
        for name, inner_params in nested.items():
            valid[name].set_params(**inner_params)
        return self

    def __repr__(self) -> str:
        defaults = {p.name: p.default for p in inspect.signature(type(self).__init__).parameters.values()}
        changed = []
        for name, value in self.get_params(deep=False).items():
            default = defaults.get(name, inspect.Parameter.empty)
            try:
                same = value is default or bool(value == default)
            except (TypeError, ValueError):  # arrays and the like compare element-wise
                same = False
            if not same:
                changed.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(changed)})"
