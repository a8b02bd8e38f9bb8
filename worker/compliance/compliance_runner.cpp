#include "compliance/compliance_runner.hpp"

#include <spdlog/spdlog.h>

#include <map>
#include <memory>
#include <optional>
#include <pqxx/pqxx>
#include <vector>

#include "compliance/compliance_answers.hpp"
#include "queue/payload.hpp"

namespace tweetkeeper::worker::compliance {
namespace {

struct Claimed {
  std::int64_t id = 0;
  std::string x_job_id;
  std::string status;
  std::vector<std::int64_t> ids;
};

// What went wrong with an exchange, for a log line: its status or transport error (never a URL).
std::string Describe(const HttpResponse& r) {
  if (r.status == 0) return r.error.empty() ? std::string("no answer") : r.error;
  return "HTTP " + std::to_string(r.status);
}

}  // namespace

class ComplianceDb {
 public:
  explicit ComplianceDb(const std::string& dsn) : connection_(std::make_unique<pqxx::connection>(dsn)) {}

  std::optional<Claimed> Claim(const std::string& worker, const std::string& credential, int max_ids, int lease_s) {
    pqxx::work tx(*connection_);
    const pqxx::result r = tx.exec_params(
        "SELECT job_id, coalesce(x_job_id, ''), status, tweet_ids"
        "  FROM tweetkeeper.compliance_claim($1, $2, $3, make_interval(secs => $4))",
        worker, credential, max_ids, lease_s);
    tx.commit();
    if (r.empty()) return std::nullopt;
    return Claimed{r[0][0].as<std::int64_t>(), r[0][1].as<std::string>(), r[0][2].as<std::string>(), ParseBigintArray(r[0][3].c_str()).value_or(std::vector<std::int64_t>{})};
  }
  void Update(std::int64_t job, const std::string& x_job_id, const std::string& status, const std::string& detail) {
    pqxx::work tx(*connection_);
    tx.exec_params("SELECT tweetkeeper.compliance_update($1, nullif($2, ''), $3, nullif($4, ''))", job, x_job_id, status,
                   detail);
    tx.commit();
  }
  int Store(std::int64_t job, const Results& results) {
    pqxx::work tx(*connection_);
    const pqxx::row r = tx.exec_params1("SELECT tweetkeeper.store_compliance_results($1, $2::bigint[], $3::text[])", job,
                                        ArrayLiteral(results.ids), TextArrayLiteral(results.reasons));
    tx.commit();
    return r[0].as<int>();
  }

 private:
  std::unique_ptr<pqxx::connection> connection_;
};

ComplianceRunner::ComplianceRunner(ComplianceOptions options, StopSignal& stop)
    : options_(std::move(options)), stop_(stop) {
  options_.http.recorder.reset();
  options_.http.max_body_bytes = std::max<std::size_t>(options_.http.max_body_bytes, 64u << 20);
}

void ComplianceRunner::Run() {
  spdlog::info("compliance: checking X posts past their last refresh with batch compliance jobs ({} credential(s), "
               "asked about every {} s)", options_.tokens.size(), options_.poll.count());
  std::set<std::string> off;  // databases where this worker may not, or cannot, run jobs
  // One connection per database, kept between turns (a job's lease is the session's), and one
  // HTTP client (its connections kept alive).
  std::map<std::string, std::unique_ptr<ComplianceDb>> dbs;
  HttpClient http(options_.http);
  while (!stop_.stopping() && off.size() < options_.dsns.size()) {
    bool open = false;
    for (const std::string& dsn : options_.dsns)
    for (const auto& [credential, token] : options_.tokens) {
      if (stop_.stopping() || token.empty() || off.count(dsn)) continue;
      try {
        std::unique_ptr<ComplianceDb>& db = dbs[dsn];
        if (!db) db = std::make_unique<ComplianceDb>(dsn);
        open = Turn(*db, http, dsn, credential, token) || open;
      } catch (const pqxx::undefined_function&) {
        // (An extension older than 0.5.0: the workers were updated first. That database only.)
        spdlog::warn("compliance: a database has no compliance_claim() (tweetkeeper older than 0.5.0): no compliance "
                     "jobs there from this worker; update the extension");
        off.insert(dsn);
      } catch (const pqxx::insufficient_privilege&) {
        spdlog::warn("compliance: this role may not run compliance jobs in a database (it needs tweetkeeper_worker): "
                     "none there from this worker");
        off.insert(dsn);
      } catch (const pqxx::broken_connection& e) {
        dbs.erase(dsn);  // (connected again at its next turn)
        spdlog::warn("compliance: no database ({}); trying again later", e.what());
      } catch (const pqxx::sql_error& e) {
        spdlog::error("compliance: the database refused: {}", e.what());
      } catch (const std::exception& e) {
        spdlog::error("compliance: {}", e.what());
      }
    }
    // Nothing open: look for posts due for a check less often.
    stop_.SleepUnlessStopped(std::chrono::duration_cast<std::chrono::milliseconds>(open ? options_.poll : options_.poll * 5));
  }
}

bool ComplianceRunner::Turn(ComplianceDb& db, HttpClient& http, const std::string& dsn, const std::string& credential,
                            const std::string& token) {
  const std::optional<Claimed> job = db.Claim(options_.name, credential, options_.max_ids, options_.lease_seconds);
  if (!job) return false;
  const std::atomic<bool>* abort = stop_.abort_flag();
  const std::string base = options_.api_url;
  Job x;
  std::string why;
  if (job->x_job_id.empty()) {
    const HttpResponse r = http.Send("POST", base + "/2/compliance/jobs", token,
                                     CreateJobBody("tweetkeeper-" + std::to_string(job->id)), "application/json", abort);
    if (r.status != 200 || !ParseJob(r.body, &x, &why)) {
      if (r.status != 200) ParseJob(r.body, &x, &why);
      // Failed, not tried again at every poll: its posts are due again within a day (a job
      // another of the app's workers runs, a window used up, a refusal all pass by then).
      db.Update(job->id, "", "failed", "X would not create it: " + Describe(r) + (why.empty() ? "" : "; " + why));
      spdlog::warn("compliance: credential {} could not create a job of {} ids: {}{}; its posts are due for a check "
                   "again within a day", credential, job->ids.size(), Describe(r), why.empty() ? "" : "; " + why);
      return false;
    }
    db.Update(job->id, x.id, "created", "");
    spdlog::info("compliance: job {} (X's {}) of {} ids created", job->id, x.id, job->ids.size());
  } else {
    const HttpResponse r = http.Get(base + "/2/compliance/jobs/" + job->x_job_id, token, abort);
    if (r.status != 200 || !ParseJob(r.body, &x, &why)) {
      spdlog::warn("compliance: job {} (X's {}) could not be asked about: {}{}", job->id, job->x_job_id, Describe(r),
                   why.empty() ? "" : "; " + why);
      return true;
    }
  }
  if (x.status == "created") {
    if (uploaded_.count({dsn, job->id})) return true;  // (X has not taken the upload in yet)
    bool same_host = false;
    if (const std::string refused = StorageUrlRefusal(x.upload_url, base, &same_host); !refused.empty()) {
      spdlog::warn("compliance: job {}: X's upload URL is refused: {}", job->id, refused);
      return true;
    }
    const Reach reach = same_host || options_.allow_private_hosts ? Reach::kAny : Reach::kPublicOnly;
    // (Signed: no token goes with it.)
    const HttpResponse u = http.Send("PUT", x.upload_url, "", IdsFile(job->ids), "text/plain", abort, reach);
    if (u.status != 200) {
      spdlog::warn("compliance: job {}: uploading its {} ids failed: {}", job->id, job->ids.size(), Describe(u));
      return true;
    }
    uploaded_.insert({dsn, job->id});
    spdlog::info("compliance: job {}: {} ids uploaded", job->id, job->ids.size());
  } else if (x.status == "in_progress") {
    if (job->status != "in_progress") db.Update(job->id, x.id, "in_progress", "");
  } else if (x.status == "complete") {
    bool same_host = false;
    if (const std::string refused = StorageUrlRefusal(x.download_url, base, &same_host); !refused.empty()) {
      spdlog::warn("compliance: job {}: X's download URL is refused: {}", job->id, refused);
      return true;
    }
    const Reach reach = same_host || options_.allow_private_hosts ? Reach::kAny : Reach::kPublicOnly;
    const HttpResponse d = http.Get(x.download_url, "", abort, reach);
    if (d.status != 200) {
      spdlog::warn("compliance: job {}: reading its results failed: {}", job->id, Describe(d));
      return true;
    }
    const Results results = ParseResults(d.body, job->ids.size() + 1000);
    if (results.refused > 0)
      spdlog::warn("compliance: job {}: {} result line(s) refused, the first: {}", job->id, results.refused,
                   results.first_refusal);
    const int gone = db.Store(job->id, results);
    uploaded_.erase({dsn, job->id});
    spdlog::info("compliance: job {} (X's {}) complete: {} ids checked, {} named out of compliance, {} post(s) gone now",
                 job->id, x.id, job->ids.size(), results.ids.size(), gone);
  } else {  // failed, expired
    db.Update(job->id, x.id, x.status, "X says the job " + x.status);
    uploaded_.erase({dsn, job->id});
    spdlog::warn("compliance: job {} (X's {}) {}: its posts are due for a check again within a day", job->id, x.id,
                 x.status);
    return false;
  }
  return true;
}

}  // namespace tweetkeeper::worker::compliance
