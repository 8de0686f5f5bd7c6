#include "campaign/ledger.h"

#include "judge/common.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <variant>

namespace temper::campaign {

namespace {

const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', '3');
CREATE TABLE IF NOT EXISTS compiles (
  key TEXT PRIMARY KEY, time TEXT NOT NULL, round INTEGER, attempt INTEGER, label TEXT,
  seconds REAL NOT NULL, cache_hit INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS judge_runs (
  key TEXT PRIMARY KEY, time TEXT NOT NULL, round INTEGER, milestone TEXT, attempt INTEGER, op TEXT NOT NULL,
  tier TEXT, cases INTEGER, seconds REAL NOT NULL, compile_seconds REAL NOT NULL, confirm_seconds REAL NOT NULL,
  turn TEXT, queue_seconds REAL NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS agent_turns (
  key TEXT PRIMARY KEY, time TEXT NOT NULL, round INTEGER, role TEXT NOT NULL, purpose TEXT, agent TEXT,
  seconds REAL NOT NULL, input_tokens INTEGER, output_tokens INTEGER, cost_usd REAL, exit_code INTEGER,
  timed_out INTEGER);
CREATE TABLE IF NOT EXISTS revisions (
  key TEXT PRIMARY KEY, time TEXT NOT NULL, round INTEGER, number INTEGER, trigger TEXT, kind TEXT,
  from_id TEXT, reason TEXT);
CREATE TABLE IF NOT EXISTS promotions (
  key TEXT PRIMARY KEY, time TEXT NOT NULL, round INTEGER, promoted INTEGER NOT NULL, attempt INTEGER,
  reference_id TEXT, speedup REAL, note TEXT);
CREATE TABLE IF NOT EXISTS cluster_jobs (
  key TEXT PRIMARY KEY, time TEXT NOT NULL, judge_run TEXT, job TEXT, slurm_id TEXT, submission INTEGER,
  state TEXT, node TEXT, queue_seconds REAL, run_seconds REAL, note TEXT);
)sql";

using Value = std::variant<std::monostate, int64_t, double, std::string>;

// A prepared statement that finalizes itself.
class Statement {
public:
  Statement(sqlite3* db, const char* sql) : m_db(db) { m_rc = sqlite3_prepare_v2(db, sql, -1, &m_stmt, nullptr); }
  ~Statement() { sqlite3_finalize(m_stmt); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Status bind_all(const std::vector<Value>& values) {
    if (m_rc != SQLITE_OK) return fail("ledger: {}", sqlite3_errmsg(m_db));
    int i = 1;
    for (const Value& v : values) {
      int rc = SQLITE_OK;
      if (std::holds_alternative<std::monostate>(v)) rc = sqlite3_bind_null(m_stmt, i);
      else if (auto* n = std::get_if<int64_t>(&v)) rc = sqlite3_bind_int64(m_stmt, i, *n);
      else if (auto* d = std::get_if<double>(&v)) rc = sqlite3_bind_double(m_stmt, i, *d);
      else {
        const auto& s = std::get<std::string>(v);
        rc = sqlite3_bind_text(m_stmt, i, s.c_str(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
      }
      if (rc != SQLITE_OK) return fail("ledger: bind: {}", sqlite3_errmsg(m_db));
      ++i;
    }
    return {};
  }
  int step() { return sqlite3_step(m_stmt); }
  sqlite3_stmt* get() { return m_stmt; }
  bool ok() const { return m_rc == SQLITE_OK; }

private:
  sqlite3* m_db;
  sqlite3_stmt* m_stmt = nullptr;
  int m_rc = SQLITE_OK;
};

Expected<bool> insert(sqlite3* db, const char* sql, const std::vector<Value>& values) {
  Statement st(db, sql);
  TEMPER_TRY(st.bind_all(values));
  if (st.step() != SQLITE_DONE) return fail("ledger: insert: {}", sqlite3_errmsg(db));
  return sqlite3_changes(db) > 0;
}

Value opt(const std::optional<int64_t>& v) { return v ? Value(*v) : Value(); }
Value opt(const std::optional<double>& v) { return v ? Value(*v) : Value(); }

double column_double(Statement& st, int i) { return sqlite3_column_double(st.get(), i); }

Status exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) == SQLITE_OK) return {};
  std::string msg = err ? err : sqlite3_errmsg(db);
  sqlite3_free(err);
  return fail("{}", msg);
}

// Creates the tables of a new ledger, or brings an older one up to kLedgerSchemaVersion. In
// one write transaction, so two temper processes opening an old ledger migrate it once.
Status create_or_migrate(sqlite3* db) {
  TEMPER_TRY(exec(db, "BEGIN IMMEDIATE"));
  auto body = [&]() -> Status {
    TEMPER_TRY(exec(db, kSchema));
    Statement st(db, "SELECT value FROM meta WHERE key = 'schema_version'");
    if (!st.ok() || st.step() != SQLITE_ROW) return fail("no schema version: {}", sqlite3_errmsg(db));
    const int version = sqlite3_column_int(st.get(), 0);
    if (version > kLedgerSchemaVersion) {
      return fail("schema version {} is newer than this temper's {}: open it with a newer temper", version, kLedgerSchemaVersion);
    }
    if (version < 2) {
      // Old rows keep NULL: which turn they ran in was not recorded (totals() says how they count).
      TEMPER_TRY(exec(db, "ALTER TABLE judge_runs ADD COLUMN turn TEXT"));
    }
    if (version < 3) TEMPER_TRY(exec(db, "ALTER TABLE judge_runs ADD COLUMN queue_seconds REAL NOT NULL DEFAULT 0"));
    const std::string set = fmt::format("UPDATE meta SET value = '{}' WHERE key = 'schema_version'", kLedgerSchemaVersion);
    return exec(db, set.c_str());
  };
  Status st = body();
  if (!st) {
    (void)exec(db, "ROLLBACK");
    return st;
  }
  return exec(db, "COMMIT");
}

} // namespace

Expected<Ledger> Ledger::open(const std::filesystem::path& file) {
  sqlite3* db = nullptr;
  if (sqlite3_open(file.c_str(), &db) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return fail("ledger {}: {}", file.string(), msg);
  }
  Ledger ledger(db);
  sqlite3_busy_timeout(db, 5000);
  // WAL with NORMAL sync: a committed row survives a kill of temper at any moment (the
  // campaign's promise) without an fsync per row.
  Status st = exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
  if (st) st = create_or_migrate(db);
  if (!st) return fail("ledger {}: {}", file.string(), st.error().message);
  return ledger;
}

Ledger::Ledger(Ledger&& o) noexcept : m_db(o.m_db) { o.m_db = nullptr; }
Ledger& Ledger::operator=(Ledger&& o) noexcept {
  if (this != &o) {
    sqlite3_close(m_db);
    m_db = o.m_db;
    o.m_db = nullptr;
  }
  return *this;
}
Ledger::~Ledger() { sqlite3_close(m_db); }

Expected<bool> Ledger::add(const CompileRow& r) {
  return insert(m_db, "INSERT OR IGNORE INTO compiles VALUES (?,?,?,?,?,?,?)",
                {r.key, judge::utc_now(), int64_t{r.round}, int64_t{r.attempt}, r.label, r.seconds, int64_t{r.cache_hit}});
}

Expected<bool> Ledger::add(const JudgeRunRow& r) {
  return insert(m_db,
                "INSERT OR IGNORE INTO judge_runs (key, time, round, milestone, attempt, op, tier, cases, seconds, "
                "compile_seconds, confirm_seconds, turn, queue_seconds) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                {r.key, judge::utc_now(), int64_t{r.round}, r.milestone, int64_t{r.attempt}, r.op, r.tier,
                 int64_t{r.cases}, r.seconds, r.compile_seconds, r.confirm_seconds, r.turn, r.queue_seconds});
}

Expected<bool> Ledger::add(const ClusterJobRow& r) {
  return insert(m_db,
                "INSERT OR IGNORE INTO cluster_jobs (key, time, judge_run, job, slurm_id, submission, state, node, queue_seconds, "
                "run_seconds, note) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                {r.key, judge::utc_now(), r.judge_run, r.job, r.slurm_id, int64_t{r.submission}, r.state, r.node, r.queue_seconds,
                 r.run_seconds, r.note});
}

Expected<bool> Ledger::add(const AgentTurnRow& r) {
  return insert(m_db, "INSERT OR IGNORE INTO agent_turns VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                {r.key, judge::utc_now(), int64_t{r.round}, r.role, r.purpose, r.agent, r.seconds, opt(r.input_tokens),
                 opt(r.output_tokens), opt(r.cost_usd), int64_t{r.exit_code}, int64_t{r.timed_out}});
}

Expected<bool> Ledger::add(const RevisionRow& r) {
  return insert(m_db, "INSERT OR IGNORE INTO revisions VALUES (?,?,?,?,?,?,?,?)",
                {r.key, judge::utc_now(), int64_t{r.round}, int64_t{r.number}, r.trigger, r.kind, r.from, r.reason});
}

Expected<bool> Ledger::add(const PromotionRow& r) {
  return insert(m_db, "INSERT OR IGNORE INTO promotions VALUES (?,?,?,?,?,?,?,?)",
                {r.key, judge::utc_now(), int64_t{r.round}, int64_t{r.promoted}, int64_t{r.attempt}, r.reference_id,
                 r.speedup, r.note});
}

Expected<bool> Ledger::has(const std::string& table, const std::string& key) const {
  if (table != "compiles" && table != "judge_runs" && table != "agent_turns" && table != "revisions" && table != "promotions" &&
      table != "cluster_jobs") {
    return fail("ledger: unknown table '{}'", table);
  }
  const std::string sql = "SELECT 1 FROM " + table + " WHERE key = ?";
  Statement st(m_db, sql.c_str());
  TEMPER_TRY(st.bind_all({key}));
  int rc = st.step();
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return fail("ledger: {}", sqlite3_errmsg(m_db));
  return rc == SQLITE_ROW;
}

namespace {
std::string column_text(sqlite3_stmt* st, int i) {
  const unsigned char* t = sqlite3_column_text(st, i);
  return t ? reinterpret_cast<const char*>(t) : "";
}
} // namespace

Expected<std::vector<std::pair<std::string, RevisionRow>>> Ledger::revisions() const {
  Statement st(m_db, "SELECT key, time, round, number, trigger, kind, from_id, reason FROM revisions ORDER BY rowid");
  if (!st.ok()) return fail("ledger: {}", sqlite3_errmsg(m_db));
  std::vector<std::pair<std::string, RevisionRow>> out;
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) {
    RevisionRow r{column_text(st.get(), 0), sqlite3_column_int(st.get(), 2), sqlite3_column_int(st.get(), 3),
                  column_text(st.get(), 4), column_text(st.get(), 5), column_text(st.get(), 6), column_text(st.get(), 7)};
    out.emplace_back(column_text(st.get(), 1), std::move(r));
  }
  if (rc != SQLITE_DONE) return fail("ledger: {}", sqlite3_errmsg(m_db));
  return out;
}

Expected<std::vector<std::pair<std::string, PromotionRow>>> Ledger::promotions() const {
  Statement st(m_db, "SELECT key, time, round, promoted, attempt, reference_id, speedup, note FROM promotions ORDER BY rowid");
  if (!st.ok()) return fail("ledger: {}", sqlite3_errmsg(m_db));
  std::vector<std::pair<std::string, PromotionRow>> out;
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) {
    PromotionRow r{column_text(st.get(), 0), sqlite3_column_int(st.get(), 2), sqlite3_column_int(st.get(), 3) != 0,
                   sqlite3_column_int(st.get(), 4), column_text(st.get(), 5), column_double(st, 6), column_text(st.get(), 7)};
    out.emplace_back(column_text(st.get(), 1), std::move(r));
  }
  if (rc != SQLITE_DONE) return fail("ledger: {}", sqlite3_errmsg(m_db));
  return out;
}

Expected<LedgerTotals> Ledger::totals() const {
  LedgerTotals t;
  auto query = [&](const char* sql, auto&& on_row) -> Status {
    Statement st(m_db, sql);
    if (!st.ok()) return fail("ledger: {}", sqlite3_errmsg(m_db));
    int rc;
    while ((rc = st.step()) == SQLITE_ROW) on_row(st);
    if (rc != SQLITE_DONE) return fail("ledger: {}", sqlite3_errmsg(m_db));
    return {};
  };
  TEMPER_TRY(query("SELECT COUNT(*), COALESCE(SUM(cache_hit),0) FROM compiles", [&](Statement& st) {
    t.compiles = sqlite3_column_int(st.get(), 0);
    t.compile_cache_hits = sqlite3_column_int(st.get(), 1);
  }));
  // Each run's wall time split three ways with nothing left over: confirmation, then compile
  // (both capped by what is left, since builds that ran in parallel report their summed time),
  // then the rest, which is probe or gate by the op.
  TEMPER_TRY(query(R"sql(
      SELECT op, COUNT(*), COALESCE(SUM(seconds),0), COALESCE(SUM(conf),0), COALESCE(SUM(MIN(compile_seconds, seconds - conf)),0)
      FROM (SELECT op, MAX(seconds, 0) AS seconds, MAX(compile_seconds, 0) AS compile_seconds,
                   MIN(MAX(confirm_seconds, 0), MAX(seconds, 0)) AS conf FROM judge_runs)
      GROUP BY op)sql",
                   [&](Statement& st) {
                     std::string op = reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0));
                     const double seconds = column_double(st, 2);
                     const double confirm = column_double(st, 3);
                     const double compile = column_double(st, 4);
                     t.judge_runs += sqlite3_column_int(st.get(), 1);
                     (op == "submit" || op == "final" ? t.gate_s : t.probe_s) += seconds - confirm - compile;
                     t.confirmation_s += confirm;
                     t.compile_s += compile;
                     t.judge_s += seconds;
                     if (op == "final") t.final_s += seconds;
                   }));
  TEMPER_TRY(query("SELECT COUNT(*), COALESCE(SUM(seconds),0), COALESCE(SUM(cost_usd),0), COALESCE(SUM(input_tokens),0) + COALESCE(SUM(output_tokens),0) FROM agent_turns",
                   [&](Statement& st) {
                     t.agent_turns = sqlite3_column_int(st.get(), 0);
                     t.agent_s = column_double(st, 1);
                     t.agent_cost_usd = column_double(st, 2);
                     t.tokens = sqlite3_column_int64(st.get(), 3);
                   }));
  // The agents' own time: each turn less the judge runs its harness requests made. Rows of a
  // schema 1 ledger (turn NULL) do not say which turn; those a harness request made (the
  // Student's probes and submissions, the Teacher's ref-time requests) count against the turns
  // as a whole.
  double own = 0;
  TEMPER_TRY(query(R"sql(
      SELECT COALESCE(SUM(MAX(0, t.seconds - COALESCE((SELECT SUM(j.seconds + j.queue_seconds) FROM judge_runs j WHERE j.turn = t.key), 0))), 0)
      FROM agent_turns t)sql",
                   [&](Statement& st) { own = column_double(st, 0); }));
  TEMPER_TRY(query(R"sql(
      SELECT COALESCE(SUM(seconds + queue_seconds),0) FROM judge_runs
      WHERE turn IS NULL AND (op IN ('probe', 'submit') OR key GLOB 'R*-ref-time-*'))sql",
                   [&](Statement& st) { own -= column_double(st, 0); }));
  t.agent_own_s = std::max(0.0, own);
  t.agent_judge_s = t.agent_s - t.agent_own_s;
  TEMPER_TRY(query("SELECT COALESCE(SUM(queue_seconds),0) FROM judge_runs", [&](Statement& st) { t.queue_s = column_double(st, 0); }));
  TEMPER_TRY(query("SELECT COUNT(*), COALESCE(SUM(state <> 'COMPLETED'),0) FROM cluster_jobs", [&](Statement& st) {
    t.cluster_jobs = sqlite3_column_int(st.get(), 0);
    t.cluster_failed = sqlite3_column_int(st.get(), 1);
  }));
  TEMPER_TRY(query("SELECT COUNT(*) FROM revisions", [&](Statement& st) { t.revisions = sqlite3_column_int(st.get(), 0); }));
  TEMPER_TRY(query("SELECT COALESCE(SUM(promoted),0) FROM promotions", [&](Statement& st) { t.promotions = sqlite3_column_int(st.get(), 0); }));
  return t;
}

} // namespace temper::campaign
