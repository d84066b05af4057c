//! The versioned schema. Each migration moves the database one version up; they run in one
//! transaction when a store is opened. docs/store-schema.md documents every table and column.

/// The schema version this rtscope writes.
pub const SCHEMA_VERSION: i64 = 11;

/// A random (version 4) UUID, as an SQL expression.
pub const UUID_SQL: &str = "lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-' || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))";

/// Mergeable records (issue 16): every run and campaign gets a UUID (existing ones a random
/// one now) and the identity of the host that measured it, so `rtscope runs merge` can tell a
/// run it already has from a new one. The lead renumbers this migration at merge time.
pub const MIGRATION_RUN_IDENTITY: &str = r#"
ALTER TABLE runs ADD COLUMN uuid TEXT;                -- random UUID, the run's identity across databases
ALTER TABLE runs ADD COLUMN host TEXT;                -- host name (uname nodename)
ALTER TABLE runs ADD COLUMN machine_id TEXT;          -- /etc/machine-id, where present
ALTER TABLE runs ADD COLUMN board_model TEXT;         -- /proc/device-tree/model, where present
ALTER TABLE campaigns ADD COLUMN uuid TEXT;
UPDATE runs SET uuid = lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-' || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6))) WHERE uuid IS NULL;
UPDATE campaigns SET uuid = lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-' || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6))) WHERE uuid IS NULL;
UPDATE runs SET host = (SELECT value FROM environment e WHERE e.run_id = runs.id AND e.key = 'uname.nodename');
CREATE UNIQUE INDEX runs_by_uuid ON runs(uuid);
CREATE UNIQUE INDEX campaigns_by_uuid ON campaigns(uuid);
"#;

/// Run ids are never given twice (issue 26): SQLite gives a new row the largest id + 1, so
/// `runs delete` of the newest run made the next run take its number, and a report, a CI
/// job's link or a note that named "run 2" then named another run. `id_sequence` keeps the
/// highest id ever given (as AUTOINCREMENT's `sqlite_sequence` would; the existing `runs`
/// table cannot be rebuilt with AUTOINCREMENT in place without dropping it, which would
/// cascade to every table that references it), and [`NEXT_RUN_ID`] gives the next.
pub const RUN_ID_SEQUENCE: &str = r#"
CREATE TABLE id_sequence (
    name  TEXT PRIMARY KEY,                      -- 'runs'
    last  INTEGER NOT NULL                       -- highest id ever given, deleted runs included
);
INSERT INTO id_sequence (name, last) SELECT 'runs', coalesce(max(id), 0) FROM runs;
CREATE TRIGGER runs_id_sequence AFTER INSERT ON runs BEGIN
    UPDATE id_sequence SET last = max(last, NEW.id) WHERE name = 'runs';
END;
"#;

/// The id of the next run, as an SQL expression (of `main`'s tables when another database is
/// attached): one above any id given before, never one of a deleted run.
pub const NEXT_RUN_ID: &str = "(SELECT max(s.last, (SELECT coalesce(max(r.id), 0) FROM main.runs r)) + 1 FROM main.id_sequence s WHERE s.name = 'runs')";

/// Migration `i` upgrades version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[
    // 0 -> 1
    r#"
CREATE TABLE runs (
    id              INTEGER PRIMARY KEY,
    kind            TEXT NOT NULL,               -- 'measure', 'cyclictest', 'import'
    label           TEXT,
    status          TEXT NOT NULL,               -- 'running', 'complete', 'interrupted', 'failed'
    started         TEXT NOT NULL,               -- RFC 3339 UTC
    started_unix_ns INTEGER NOT NULL,
    ended           TEXT,
    progress_ns     INTEGER NOT NULL DEFAULT 0,  -- time measured so far (last checkpoint)
    checkpoint_unix_ns INTEGER,                  -- time of the last checkpoint, ns since the epoch
    exit_code       INTEGER,
    pid             INTEGER NOT NULL,
    tool_version    TEXT NOT NULL,
    command_line    TEXT NOT NULL,               -- JSON array of strings
    config          TEXT NOT NULL                -- JSON object
);
CREATE TABLE tags (
    run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    key     TEXT NOT NULL,
    value   TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
);
CREATE TABLE environment (
    run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    key     TEXT NOT NULL,
    value   TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
);
CREATE TABLE threads (
    run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    thread        INTEGER NOT NULL,
    tid           INTEGER,
    cpu           INTEGER,
    policy        TEXT NOT NULL,
    priority      INTEGER NOT NULL,
    interval_ns   INTEGER NOT NULL,
    samples       INTEGER NOT NULL DEFAULT 0,
    min_ns        INTEGER,
    mean_ns       REAL,
    max_ns        INTEGER,
    max_cycle     INTEGER,
    max_offset_ns INTEGER,
    missed        INTEGER NOT NULL DEFAULT 0,
    histogram     BLOB,                          -- see codec.rs: sparse log-linear buckets
    PRIMARY KEY (run_id, thread)
);
CREATE TABLE series (
    run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    thread      INTEGER NOT NULL,
    offset_ns   INTEGER NOT NULL,                -- end of the interval, from the run's start
    length_ns   INTEGER NOT NULL,                -- length of the interval
    samples     INTEGER NOT NULL,
    min_ns      INTEGER,
    max_ns      INTEGER,
    mean_ns     REAL,
    p99_ns      INTEGER,
    missed      INTEGER NOT NULL,
    PRIMARY KEY (run_id, thread, offset_ns)
);
CREATE TABLE events (
    run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    thread      INTEGER NOT NULL,
    cycle       INTEGER NOT NULL,
    latency_ns  INTEGER NOT NULL,
    offset_ns   INTEGER NOT NULL,                -- wake-up time from the run's start
    unix_ns     INTEGER NOT NULL                 -- wake-up time, Unix epoch
);
CREATE INDEX events_by_run ON events(run_id, thread, cycle);
"#,
    // 1 -> 2: raw samples (`--raw`) and the count of samples the writer could not keep.
    r#"
CREATE TABLE samples (
    run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    thread       INTEGER NOT NULL,
    first_cycle  INTEGER NOT NULL,               -- cycle of the chunk's first sample
    count        INTEGER NOT NULL,               -- samples in the chunk
    data         BLOB NOT NULL,                  -- see codec.rs: delta/varint-coded samples
    PRIMARY KEY (run_id, thread, first_cycle)
);
ALTER TABLE threads ADD COLUMN raw_dropped INTEGER NOT NULL DEFAULT 0;
"#,
    // 2 -> 3: system monitors, loads and campaigns.
    r#"
CREATE TABLE monitor_metrics (
    id      INTEGER PRIMARY KEY,
    run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    name    TEXT NOT NULL,                       -- e.g. 'temp.cpu-thermal', 'irq_rate.LOC.cpu0'
    unit    TEXT NOT NULL,                       -- 'degC', 'kHz', '1/s', '%', 'bytes', ...
    UNIQUE (run_id, name)
);
CREATE TABLE monitor_values (
    metric_id  INTEGER NOT NULL REFERENCES monitor_metrics(id) ON DELETE CASCADE,
    offset_ns  INTEGER NOT NULL,                 -- sample time from the run's start
    value      REAL NOT NULL,
    PRIMARY KEY (metric_id, offset_ns)
) WITHOUT ROWID;
CREATE TABLE monitor_states (
    run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    metric     TEXT NOT NULL,                    -- e.g. 'governor.cpu0'
    offset_ns  INTEGER NOT NULL,                 -- first sample with this value
    value      TEXT NOT NULL,
    PRIMARY KEY (run_id, metric, offset_ns)
);
CREATE TABLE monitor_top (
    run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    offset_ns    INTEGER NOT NULL,
    rank         INTEGER NOT NULL,               -- 0 = the busiest thread of that sample
    pid          INTEGER NOT NULL,
    tid          INTEGER NOT NULL,
    comm         TEXT NOT NULL,
    cpu_percent  REAL NOT NULL,                  -- % of one CPU over the sample interval
    last_cpu     INTEGER NOT NULL,
    kernel       INTEGER NOT NULL,               -- 1 for kernel threads (irq/.., ksoftirqd/..)
    PRIMARY KEY (run_id, offset_ns, rank)
);
CREATE TABLE monitor_sources (
    run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    source     TEXT NOT NULL,                    -- 'thermal', 'cpufreq', 'interrupts', ...
    available  INTEGER NOT NULL,
    why        TEXT NOT NULL,                    -- what was found, or why it is unavailable
    PRIMARY KEY (run_id, source)
);
CREATE TABLE loads (
    run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx           INTEGER NOT NULL,
    name          TEXT NOT NULL,                 -- 'messaging', 'memory', 'hackbench', ...
    spec          TEXT NOT NULL,                 -- JSON LoadSpec
    command_line  TEXT NOT NULL,                 -- JSON array: the exact argv executed
    status        TEXT NOT NULL,                 -- 'ok', 'failed', 'killed'
    error         TEXT,
    ran_ns        INTEGER NOT NULL,
    metrics       TEXT NOT NULL,                 -- JSON array of {name, value, unit}
    PRIMARY KEY (run_id, idx)
);
CREATE TABLE campaigns (
    id            INTEGER PRIMARY KEY,
    name          TEXT NOT NULL,
    source        TEXT NOT NULL,                 -- file path, or 'preset:quick'
    definition    TEXT NOT NULL,                 -- the campaign TOML as run
    started       TEXT NOT NULL,                 -- RFC 3339 UTC
    ended         TEXT,
    status        TEXT NOT NULL,                 -- 'running', 'complete', 'interrupted', 'failed'
    planned_runs  INTEGER NOT NULL,
    pid           INTEGER NOT NULL,
    command_line  TEXT NOT NULL                  -- JSON array
);
CREATE TABLE campaign_runs (
    campaign_id  INTEGER NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
    seq          INTEGER NOT NULL,               -- position in the campaign plan, from 1
    run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    scenario     TEXT NOT NULL,
    load_case    TEXT NOT NULL,
    repeat       INTEGER NOT NULL,               -- from 1
    PRIMARY KEY (campaign_id, run_id)
);
CREATE INDEX campaign_runs_by_run ON campaign_runs(run_id);
"#,
    // 3 -> 4: the preflight audit (`rtscope check`) a run was started with.
    RUN_CHECKS,
    // 4 -> 5: the explained spikes of a run (`--explain`).
    SPIKES,
    // 5 -> 6: run UUIDs and host identity.
    MIGRATION_RUN_IDENTITY,
    // 6 -> 7: run ids never given twice.
    RUN_ID_SEQUENCE,
    // 7 -> 8: whether a top thread is rtscope's own.
    MIGRATION_TOP_OWN,
    // 8 -> 9: raw sample chunks may use codec tag 3 (a sample on the grid as one number),
    // which an older rtscope cannot read: the version makes it refuse the file by name.
    MIGRATION_RAW_TAG3,
    // 9 -> 10: `rtscope watch` series and their windows.
    WATCH_TABLES,
    // 10 -> 11: what an explained run observed with: recorder, trace events, kernel stacks.
    MIGRATION_RECORDER,
];

/// Migration 10 -> 11 (issue 68 item 4): what an explained run observed with, beside its tier:
/// the recorder, the trace events it enabled, the kernel stacks it took. Summaries recorded
/// before keep NULL: not recorded (an older rtscope). A run with no summary ran no recorder.
pub const MIGRATION_RECORDER: &str = r#"
ALTER TABLE spike_summaries ADD COLUMN recorder TEXT;   -- 'tracefs instance rtscope-4711-0', '… (timerlat tracer)', 'none'; NULL: not recorded
ALTER TABLE spike_summaries ADD COLUMN events TEXT;     -- the trace events enabled, 'system:event' a line ('' without a recorder)
ALTER TABLE spike_summaries ADD COLUMN stacks TEXT;     -- 'none', 'late-only eBPF programs: …', 'late-only hist triggers: …', 'stacktrace triggers on every wake-up', 'none (unavailable)'
"#;

/// Migration 8 -> 9 (issue 28): no table changes; the version says raw sample chunks may be
/// in codec tag 3 (crates/rtscope-store/src/codec.rs).
pub const MIGRATION_RAW_TAG3: &str = "SELECT 1;";

/// Migration 7 -> 8 (issue 25): whether each top thread's process is the recording rtscope or
/// one it started (its loads), so the report tells rtscope's own overhead from another
/// program's threads of the same name. Older rows stay NULL: unknown.
pub const MIGRATION_TOP_OWN: &str = r#"
ALTER TABLE monitor_top ADD COLUMN own INTEGER;       -- 1: rtscope's process or a descendant; 0: another; NULL: not recorded
"#;

/// Migration 3 -> 4 (issue 13A): one row per check of the audit run before the measurement.
pub const RUN_CHECKS: &str = r#"
CREATE TABLE run_checks (
    run_id    INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq       INTEGER PRIMARY KEY,               -- insertion order = the audit's order
    check_id  TEXT NOT NULL,                     -- 'preempt_rt', 'governor', 'smt', ...
    verdict   TEXT NOT NULL,                     -- 'ok', 'warn', 'bad', 'unavailable'
    evidence  TEXT NOT NULL,                     -- what was read, with its file
    fix       TEXT,                              -- command or boot parameter (warn, bad)
    setting   TEXT,                              -- short comparable form ('performance', 'on')
    UNIQUE (run_id, check_id)
);
"#;

/// Migration 4 -> 5 (issue 13B): `--explain`: the explained spikes of a run and its summary
/// (docs/explain.md).
pub const SPIKES: &str = r#"
CREATE TABLE spikes (
    run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,                -- 0.., in wake-up order
    cpu         INTEGER NOT NULL,
    tid         INTEGER NOT NULL,
    offset_ns   INTEGER NOT NULL,                -- wake-up, from the run's start
    latency_ns  INTEGER NOT NULL,
    tier        TEXT NOT NULL,                   -- 'flight_recorder', 'coarse', 'timerlat'
    culprit     TEXT,                            -- the largest share, e.g. 'thread culprit:4711:rt99'
    culprit_ns  INTEGER,
    detail      TEXT NOT NULL,                   -- JSON: the attribution or coarse context
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE spike_summaries (
    run_id       INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    tier         TEXT NOT NULL,
    tier_reason  TEXT,
    threshold_ns INTEGER NOT NULL,
    clock_start_ns INTEGER NOT NULL,             -- the run's start on its clock: spike times in
                                                 -- the JSON minus this are offsets into the run
    summary      TEXT NOT NULL                   -- JSON: counts, culprits, worst spikes
);
"#;

/// Migration 9 -> 10: the watch tables.
pub const WATCH_TABLES: &str = r#"
CREATE TABLE watch_series (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT NOT NULL UNIQUE,            -- --series (default: the host name)
    uuid        TEXT NOT NULL,                   -- random UUID: the series across databases
    host        TEXT,
    created_ns  INTEGER NOT NULL,                -- Unix ns of its first start
    resumed     INTEGER NOT NULL DEFAULT 0,      -- how many times a watch resumed it
    config      TEXT NOT NULL                    -- JSON: the configuration of the latest start
);
CREATE TABLE watch_windows (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    series_id   INTEGER NOT NULL REFERENCES watch_series(id) ON DELETE CASCADE,
    level       INTEGER NOT NULL,                -- 0 as measured (--window), 1 hour, 2 day
    start_ns    INTEGER NOT NULL,                -- Unix ns, aligned to the level's span
    end_ns      INTEGER NOT NULL,                -- Unix ns (a window cut short ends early)
    cpu         INTEGER NOT NULL,                -- the measured CPU, -1 all of them
    samples     INTEGER NOT NULL,                -- wake-ups
    missed      INTEGER NOT NULL,                -- missed deadlines (not samples)
    min_ns      INTEGER,                         -- NULL without samples
    max_ns      INTEGER,                         -- bucket bound (within 0.1 %)
    p99_ns      INTEGER,
    p9999_ns    INTEGER,
    spikes      INTEGER NOT NULL,                -- samples at or above the spike threshold
    histogram   BLOB NOT NULL,                   -- the window's histogram (codec)
    alert       TEXT,                            -- the thresholds it breached
    explain     TEXT,                            -- JSON: the worst wake-up's explanation
    UNIQUE (series_id, level, cpu, start_ns)
);
CREATE INDEX watch_windows_by_time ON watch_windows(series_id, level, start_ns);
"#;
