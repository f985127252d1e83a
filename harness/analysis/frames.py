"""The history as the metric families read it, and the Spark helpers they share.

Contract
--------
:func:`prepare` reads a Parquet history and splits it into :class:`Frames`: the two large kinds
(``record``, ``produced``) apart from the *control* events, whose ``extra`` JSON is parsed once
(:data:`EXTRA_SCHEMA`) and pinned. Members are identified by ``source`` (the harness's name, copied
to ``ident``) and every event by its ``role`` (:mod:`harness.kernel.events`). Null ``case`` /
``impl`` read as ``""`` and a null ``repetition`` as 0.

The jobs over every delivery (the record keys, the consumption buckets, the processing intervals,
resumption, undisturbed partitions) read ``hashed``: the deliveries with the unit and the member as
64-bit hashes (:func:`unit_id`, :func:`member_id`) instead of their strings, cached in memory
(spilling to disk; lineage kept) by :func:`prepare`. Hashing and grouping strings dominated those
jobs: a scan of the cached copy takes a quarter of a Parquet scan with the strings (10^7 events,
``herdlab bench analysis``). ``names`` maps the hashes back (every source of a control event, and
of a delivery when some member that processed records, or some unit, has none), checked free of
collisions; ``sources`` is, per
unit, source hash, ``is_prod`` and partition, the deliveries' first and last ts, count and highest
offset (the job that fills the cache computes it, so the unit table's bounds, the partitions' highest
processed offsets and the members' processed partitions need no further pass over every delivery).
Both small tables also come into the driver once: the control events (:data:`CONTROL_COLUMNS` with
their ``uid`` and ``mid``, :attr:`Frames.events`, which :mod:`.control` serves to the families computed
in Python) and ``sources`` (:attr:`Frames.source_rows`); ``names`` is made from them there and handed
back to Spark as Arrow.

Every job's results are keyed by :data:`UNIT` (case, impl, repetition; the jobs over every delivery
by its hash, mapped back through ``names``); all times are integer nanoseconds
(``ts_ns``) inside Spark and seconds in the results (:func:`at_s`, :func:`dur_s`). The helpers:
:func:`pin` (materialise a small table, cut its lineage), :func:`join` (a join whose right columns
are renamed ``r_<name>``), :func:`collect` (rows as dicts), :func:`local_frame` (a small table of
Python rows, handed to the JVM as Arrow: no Python worker process), :func:`role_col` and
:func:`zk_steady_col` (event predicates as columns), and :func:`together` (independent Spark
actions run at once from driver threads, so that one's planning and small stages overlap another's
tasks: the analysis is many small jobs, and local mode's second core would idle in most of them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from harness.kernel.events import ZK_STEADY_OPS, ZK_STEADY_PATH, Kind

UNIT = ["case", "impl", "repetition"]
INF = 4_000_000_000_000_000_000  # "no end" in ns (year 2096); below Long.MAX so sums do not overflow
NS = 1_000_000_000

UnitKey = tuple[str, str, int]

#: The columns of the control events collected into the driver (:attr:`Frames.events`): the
#: history's own and the parsed ``extra`` fields the families read in Python (:mod:`.control`).
CONTROL_COLUMNS = (
    *UNIT,
    "ts_ns",
    "role",
    "kind",
    "source",
    "ident",
    "member",
    "partition",
    "generation",
    "op",
    "path",
    "outcome",
    "count",
    "action",
    "action_id",
    "targets",
    "trigger",
    "partitions",
    "reason",
    "migration",
    "migration_step",
    "label",
    "counters",
    "requests",
    "api",
    "state",
    "client",
    "gave_up",
    "assignments",
    "change",
    "topic",
    "library",
)

EXTRA_SCHEMA = (
    "action string, action_id long, targets array<string>, target string, `trigger` boolean, "
    "label string, counters map<string,double>, partitions string, requests map<string,double>, "
    "interval_s double, name string, from_state string, to_state string, broker_id long, api string, "
    "reason string, state string, client string, gave_up boolean, migration string, migration_step long, library string, "
    "assignments long, change boolean"
)


@dataclass
class Frames:
    """The history split for the jobs (see :func:`prepare`)."""

    raw: DataFrame
    control: DataFrame  # every event but record / produced, extra parsed
    records: DataFrame  # case, impl, repetition, ts_ns, ident, partition, offset
    produced: DataFrame  # case, impl, repetition, ts_ns, partition, offset
    deliveries: DataFrame  # both: case, impl, repetition, ts_ns, ident, partition, offset, is_prod
    hashed: DataFrame  # deliveries without strings: uid, mid, partition, offset, ts_ns, is_prod (cached)
    names: DataFrame  # case, impl, repetition, uid, ident, mid: the sources the hashes map back to (Arrow)
    sources: DataFrame  # per (uid, mid, is_prod, partition): t_first, t_last, events, top (pinned)
    #: shuffle partitions of the jobs that shuffle every delivery (the record keys); the session's
    #: own count is for every other shuffle (of small tables), and may be fewer
    wide: int
    #: the control events collected (:data:`CONTROL_COLUMNS`, ``uid`` and ``mid``), in history order
    events: list[dict[str, Any]]
    #: ``sources`` collected
    source_rows: list[dict[str, Any]]
    #: every unit by its hash (``uid``)
    units_by_id: dict[int, UnitKey]
    #: every named source's hash (``mid``) by its name
    member_ids: dict[str, int]

    def unit_hashes(self) -> dict[UnitKey, int]:
        """Every unit's hash (``uid``) by the unit."""
        return {k: uid for uid, k in self.units_by_id.items()}

    def unit_ids(self) -> DataFrame:
        """Every unit with events and its hash: case, impl, repetition, ``uid`` (from ``names``): how
        the jobs keyed by ``uid`` map their results back to units."""
        return self.names.select(*UNIT, "uid").distinct()


def prepare(spark: SparkSession, history: str, wide: int = 0, schema: pa.Schema | None = None) -> Frames:
    """Read and normalise a history (see the module contract); ``wide`` is :attr:`Frames.wide`
    (0: the session's ``spark.sql.shuffle.partitions``); ``schema`` is the file's own (its footer, as
    :func:`harness.analysis.load.load_run` read it), given to Spark when every column's type has a
    Spark equivalent (:func:`spark_schema`), else Spark infers it."""
    wide = wide or int(spark.conf.get("spark.sql.shuffle.partitions") or 1)
    reader = spark.read
    given = spark_schema(schema) if schema is not None else None
    if given is not None:
        reader = reader.schema(given)
    raw = reader.parquet(history).na.fill({"case": "", "impl": ""}).na.fill(0, ["repetition"])
    kind = F.col("kind")
    control = raw.where(~kind.isin(Kind.RECORD, Kind.PRODUCED) | kind.isNull())
    control = control.withColumn("x", F.from_json("extra", EXTRA_SCHEMA)).select("*", "x.*").drop("x")
    control = control.withColumn("ident", F.col("source"))
    # The two large kinds in one projection, read from the Parquet file by the few jobs that need their
    # strings; the jobs over every delivery read `hashed`, its copy without strings (see the contract).
    deliveries = raw.where(kind.isin(Kind.RECORD, Kind.PRODUCED)).select(
        *UNIT,
        "ts_ns",
        F.col("source").alias("ident"),
        "partition",
        "offset",
        (kind == Kind.PRODUCED).alias("is_prod"),
    )
    records = deliveries.where(~F.col("is_prod")).drop("is_prod")
    produced = deliveries.where(F.col("is_prod")).select(*UNIT, "ts_ns", "partition", "offset")
    hashed = deliveries.select(
        unit_id().alias("uid"), member_id().alias("mid"), "partition", "offset", "ts_ns", "is_prod"
    ).persist(StorageLevel.MEMORY_AND_DISK)
    # the two passes over the history at once (one's planning overlaps the other's tasks): the control
    # events pinned, and the job that fills the deliveries' cache (who delivered what in each unit, when)
    got = together(
        control=lambda: pin(control),
        sources=lambda: pin(
            hashed.groupBy("uid", "mid", "is_prod", "partition").agg(
                F.min("ts_ns").alias("t_first"),
                F.max("ts_ns").alias("t_last"),
                F.count("*").alias("events"),
                F.max("offset").alias("top"),
            )
        ),
    )
    control, sources = got["control"], got["sources"]
    # the control events (a few thousand a unit) and the deliveries' per-source figures (a row per
    # member and partition) into the driver, with the hashes the jobs over every delivery key by
    got = together(
        events=lambda: (
            control.select(*CONTROL_COLUMNS, unit_id().alias("uid"), member_id().alias("mid"))
            .toArrow()
            .to_pylist()
        ),
        source_rows=lambda: sources.toArrow().to_pylist(),
    )
    events, source_rows = got["events"], got["source_rows"]
    name_rows = {
        (e["case"], e["impl"], e["repetition"], e["uid"], e["ident"], e["mid"])
        for e in events
        if e["ident"] is not None
    }
    named = {(r[3], r[5]) for r in name_rows}
    named_units = {r[3] for r in name_rows}
    if any(
        (not r["is_prod"] and (r["uid"], r["mid"]) not in named) or r["uid"] not in named_units
        for r in source_rows
    ):
        # a member that processed records, or a unit, without a control event (the runner's histories
        # have none): their names only from the deliveries, a scan of their strings
        name_rows |= {
            (r["case"], r["impl"], r["repetition"], r["uid"], r["ident"], r["mid"])
            for r in deliveries.select(*UNIT, "ident", unit_id().alias("uid"), member_id().alias("mid"))
            .distinct()
            .toArrow()
            .to_pylist()
        }
    _check_hashes(name_rows)
    names = local_frame(
        spark,
        sorted(name_rows, key=lambda r: tuple("" if v is None else str(v) for v in r)),
        "case string, impl string, repetition int, uid long, ident string, mid long",
    )
    return Frames(
        raw=raw,
        control=control,
        records=records,
        produced=produced,
        deliveries=deliveries,
        hashed=hashed,
        names=names,
        sources=sources,
        wide=wide,
        events=events,
        source_rows=source_rows,
        units_by_id={r[3]: (r[0], r[1], r[2]) for r in name_rows},
        member_ids={r[4]: r[5] for r in name_rows if r[4] is not None},
    )


def spark_schema(schema: pa.Schema) -> T.StructType | None:
    """A Parquet file's Arrow schema as the Spark schema its columns read as (pyspark's own translation,
    ``from_arrow_schema``), or None when some column's type has no Spark equivalent (Spark then infers the
    schema itself). Given to the reader, it saves the job in which Spark reads the file's footer for it."""
    from pyspark.errors import PySparkTypeError
    from pyspark.sql.pandas.types import from_arrow_schema

    try:
        return from_arrow_schema(schema)
    except (PySparkTypeError, TypeError):
        return None


def _check_hashes(names: set[tuple[Any, ...]]) -> None:
    """Fail unless the units and the sources' names in ``names`` (case, impl, repetition, uid, ident,
    mid) hash distinctly (a 64-bit collision would merge two units' or two members' records in the jobs
    keyed by the hashes). A member that processed records is in ``names`` (prepare's fallback); a
    producer without a control event may not be, and nothing maps its hash back."""
    units = {(r[0], r[1], r[2]): r[3] for r in names}
    idents = {r[4]: r[5] for r in names}
    if len(set(units.values())) != len(units):  # pragma: no cover - 2^-64 per pair
        raise RuntimeError("two of the run's units hash alike: cannot key the records by unit")
    if len(set(idents.values())) != len(idents):  # pragma: no cover - 2^-64 per pair
        raise RuntimeError("two of the run's members' names hash alike: cannot key the records by member")


def unit_id() -> Column:
    """A unit's 64-bit hash (``xxhash64`` of case, impl and the repetition as an int): the key of the
    jobs over every record, where grouping or joining on the unit's two strings costs far more than on
    one long. The same expression wherever a table is keyed by it (:attr:`Frames.names` maps it back)."""
    return F.xxhash64("case", "impl", F.col("repetition").cast("int"))


def member_id(col: str = "ident") -> Column:
    """A source's 64-bit hash (``xxhash64`` of its name, the column ``col``): how the jobs over every
    record tell members apart (:attr:`Frames.names` maps it back)."""
    return F.xxhash64(col)


def unit_key(d: dict[str, Any]) -> UnitKey:
    """The unit of a collected row (or of a unit dict)."""
    return (d["case"], d["impl"], int(d["repetition"]))


def at_s(ns: int | None, origin: int) -> float | None:
    """``ns`` as seconds since ``origin`` (microsecond precision); None stays None."""
    return None if ns is None else round((ns - origin) / 1e9, 6)


def dur_s(a: int | None, b: int | None) -> float | None:
    """Seconds from ``a`` to ``b`` (microsecond precision); None if either is None."""
    return None if a is None or b is None else round((b - a) / 1e9, 6)


def role_col(r: str) -> Column:
    """True where the event's role is ``r`` (False, never null, where it has none)."""
    return F.coalesce(F.col("role") == r, F.lit(False))


def zk_steady_col() -> Column:
    """:func:`harness.kernel.events.zk_steady` as a Spark column (the same constants)."""
    return F.coalesce(F.col("path").contains(ZK_STEADY_PATH) & F.col("op").isin(*ZK_STEADY_OPS), F.lit(False))


def long_values(df: DataFrame, keys: list[str], names: list[str]) -> DataFrame:
    """``df``'s columns ``names`` in long format: ``keys``, ``key`` (the name), ``value`` (double)."""
    m = F.create_map(*[x for n in names for x in (F.lit(n), F.col(n).cast("double"))])
    return df.select(*keys, F.explode(m).alias("key", "value"))


def pin(df: DataFrame) -> DataFrame:
    """Materialise a (small) intermediate table now, so that the jobs reading it do not recompute it.

    Local mode: ``localCheckpoint`` (materialised and lineage cut, which keeps the later plans
    small); its blocks live in the executors, which are the driver's own JVM here, so none can be
    lost without the driver. It is read as one partition (``coalesce(1)`` of the checkpoint: no
    shuffle, the checkpoint itself is computed with every core): a pinned table had the partitions
    of the shuffle that made it, and every later stage reading it ran that many tasks over a few
    thousand rows; at 10^7 events that was 700 of the analysis's 860 tasks, 26 s of its 120 s of
    task time (``herdlab bench analysis``). On a cluster an executor can be lost, and a local
    checkpoint's blocks with it, unrecoverably (Spark's docs of ``localCheckpoint``). There the table is
    persisted (memory, spilling to disk) with its lineage kept and materialised by a count: a lost block is
    recomputed from the history, which every executor can read (checked first,
    :func:`harness.analysis.spark.check_history`). A reliable ``checkpoint`` would instead need a
    directory every executor can write and read, a second storage requirement for tables this small.
    """
    if str(df.sparkSession.sparkContext.master).startswith("local"):
        return df.localCheckpoint(eager=True).coalesce(1)
    from pyspark import StorageLevel

    df = df.persist(StorageLevel.MEMORY_AND_DISK)
    df.count()
    return df


def join(
    left: DataFrame, right: DataFrame, keys: list[str], cond: Column | None = None, how: str = "inner"
) -> DataFrame:
    """Join on equal ``keys`` plus ``cond``, with every right column renamed ``r_<name>``.

    Unique names avoid Spark's ambiguous self-join references; ``cond`` refers to right columns
    as ``r_<name>``. The right copies of the keys are dropped (inner, left and semi/anti joins).
    """
    r = right.select(*(F.col(c).alias(f"r_{c}") for c in right.columns))
    on = F.lit(True)
    for k in keys:
        on = on & (F.col(k) == F.col(f"r_{k}"))
    if cond is not None:
        on = on & cond
    j = left.join(r, on, how)
    if how in ("left_semi", "left_anti", "semi", "anti"):
        return j
    return j.drop(*(f"r_{k}" for k in keys))


def together(**calls: Callable[[], Any]) -> dict[str, Any]:
    """Call each of ``calls`` (independent Spark actions: none may use what another computes) from
    a thread of its own and return their results by name once all are done; the first error is
    raised. Each thread inherits the caller's Spark local properties (its job group)."""
    from pyspark.util import inheritable_thread_target

    if len(calls) <= 1:
        return {k: f() for k, f in calls.items()}
    session = SparkSession.getActiveSession()

    def inherit(f: Callable[[], Any]) -> Callable[[], Any]:
        # one wrapper per thread: the wrapper clones the caller's properties once and every thread it
        # wraps installs that one object, so a shared wrapper made each thread's job description
        # overwrite the others' (every job named after the last family)
        if session is None:
            return inheritable_thread_target(f)
        return inheritable_thread_target(session)(f)

    def named(name: str, f: Callable[[], Any]) -> Callable[[], Any]:
        def call() -> Any:
            if session is not None:  # Spark's UI and event log name each job after its family
                session.sparkContext.setJobDescription(name)
            return f()

        return call

    with ThreadPoolExecutor(max_workers=len(calls), thread_name_prefix="herdlab-analysis") as pool:
        futures = {k: pool.submit(inherit(named(k, f))) for k, f in calls.items()}
        return {k: f.result() for k, f in futures.items()}


def local_frame(spark: SparkSession, rows: Iterable[Sequence[Any]], ddl: str) -> DataFrame:
    """A small DataFrame of Python ``rows`` (each a sequence in the order of the columns of ``ddl``, a
    DDL schema such as ``"uid long, partition int"``), handed to the JVM as Arrow.

    ``createDataFrame`` of a Python list makes an RDD of pickled rows that Python worker processes
    read back on the executors: every job reading such a table starts Python tasks (the pyspark daemon
    and its workers). From an Arrow table the JVM builds the rows itself, and no Python process starts."""
    from pyspark.sql.pandas.types import to_arrow_schema

    schema = T.DataType.fromDDL(ddl)
    assert isinstance(schema, T.StructType), ddl
    arrow = to_arrow_schema(schema)
    data: list[tuple[Any, ...]] = []
    for r in rows:
        if isinstance(r, Mapping):  # tuple() of a dict would be its keys
            raise TypeError("local_frame takes rows as sequences in the schema's column order, not mappings")
        data.append(tuple(r))
    columns = list(zip(*data, strict=True)) if data else [() for _ in schema.fields]
    table = pa.Table.from_arrays(
        [pa.array(list(c), type=f.type) for c, f in zip(columns, arrow, strict=True)], schema=arrow
    )
    return spark.createDataFrame(table, schema)


def collect(df: DataFrame) -> list[dict[str, Any]]:
    """Rows of a (small) DataFrame as dicts."""
    return [r.asDict(recursive=True) for r in df.collect()]
