// superagent explain TRIGGER [--config FILE] [--json]
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "app/commands.h"
#include "app/config.h"
#include "core/message_url.h"
#include "policy/policy_lines.h"
#include "superagent/engine.h"
#include "superagent/text.h"
#include "superagent/views.h"

namespace superagent::app {
namespace {

const char kExplainUsage[] =
    "usage: superagent explain TRIGGER [--config FILE] [--json]\n"
    "\n"
    "Tells one message's story from the store, in plain words: who wrote it and where, what the\n"
    "Gate said and why (and which policy key, at which line, would change that), what the Eval\n"
    "decided, the Ticket it reached or created, and what the agent wrote back; then the record it\n"
    "was told from. --json prints the whole story for tools (its `told` is the same sentences).\n"
    "TRIGGER is a Trigger id (e.g. feishu:om_123) or the message's URL (a GitHub html_url).\n"
    "An issue's or pull request's URL (…/issues/5, …/pull/5, with a trailing slash, a sub-page or\n"
    "a comment's #fragment that was never received) tells the story of the discussion's newest\n"
    "message that addresses the agent — the mention a person asks about — or of its newest\n"
    "message when none does, and says which one it is.\n"
    "Reads only; safe while the daemon runs.\n";

void Line(const char* label, const std::string& value) { std::printf("    %-10s %s\n", label, value.c_str()); }

std::string Str(const nlohmann::json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); }

// The story in a person's words first; then the record it was told from, for whoever digs.
void PrintStory(const nlohmann::json& s, const std::string& policy_file, const std::string& query) {
  const auto& t = s["trigger"];
  std::printf("%s\n", Str(t["id"]).c_str());
  // A discussion's URL (or a comment's never received) was asked about: say which message of it
  // this story is, so nobody reads another message's story as their own (issue 34).
  const nlohmann::json meta = t.value("meta", nlohmann::json::object());
  const std::string own = meta.is_object() ? meta.value("html_url", meta.value("url", "")) : "";
  if (query != Str(t["id"]) && query != own && MessageUrlFormsOf(query).tidy != own)
    std::printf("  (%s names no message of its own here: this is %s, %s. Explain another by its own URL.)\n",
                query.c_str(), own.empty() ? "one message of that discussion" : own.c_str(),
                t.value("addressed", false) ? "the discussion's newest message that addresses the agent"
                                            : "the discussion's newest message (none addresses the agent)");
  for (const auto& sentence : s.value("told", nlohmann::json::array())) std::printf("  %s\n", Str(sentence).c_str());
  if (s.contains("change") && !policy_file.empty()) {
    std::vector<std::string> path;
    for (const auto& p : s["change"]["path"]) path.push_back(Str(p));
    std::printf("  %s\n", KeyLineWords(policy_file, path).c_str());
  }
  std::printf("\n  the record:\n");
  Line("message", Str(t["source"]) + " " + Str(t["scope"]) + ", " + Str(t["at"]) + ": " + text::Cut(Str(t["text"]), 200));
  Line("arrived", Str(s["arrival"]["via"]) + " at " + Str(s["arrival"]["received_at"]));
  std::string threads;
  for (const auto& th : t["threads"]) threads += (threads.empty() ? "" : ", ") + Str(th);
  Line("threads", threads);
  Line("intake", Str(s["intake"]["outcome"]) +
                     (s["intake"].contains("filter_reason") ? " (" + Str(s["intake"]["filter_reason"]) + ")" : ""));
  for (const auto& e : s.value("evals", nlohmann::json::array())) {
    std::string line = "Eval " + Str(e["eval"]) + ": Gate " + Str(e["gate"]["strength"]) + " (" +
                       Str(e["gate"]["reason"]) + ")";
    if (e.contains("decision"))
      line += ", Decision " + Str(e["decision"]["outcome"]) +
              (e["decision"].value("would_accept", false) ? " (would accept)" : "") + ": " +
              Str(e["decision"]["reason"]) + " [policy version " + Str(e["decision"]["policy_version"]) + "]";
    Line("judged", line);
  }
  if (s.contains("ticket_created")) {
    const auto& tk = s["ticket_created"];
    if (tk.contains("mandate")) {
      const auto& m = tk["mandate"];
      Line("mandate", Str(m["strength"]) + " via " + Str(m["admission"]) + ", from " + Str(m["sender"]) +
                          ", policy version " + Str(m["policy_version"]) + ", " + Str(m["status"]));
      // Issue 37: the repositories it may change, in the order their pull requests merge.
      if (m.contains("repos") && m["repos"].is_array() && !m["repos"].empty()) {
        std::string repos;
        for (const auto& r : m["repos"]) repos += (repos.empty() ? "" : " → ") + Str(r);
        Line("may change", repos);
      }
    }
  }
  for (const auto& r : s.value("receipts", nlohmann::json::array()))
    Line("wrote", Str(r["kind"]) + " (" + Str(r["status"]) + ") on " + Str(r["channel"]));
  for (const auto& q : s.value("set_aside", nlohmann::json::array()))
    Line("set aside", Str(q["what"]) + ": " + Str(q["reason"]) + " (retry from the panel's Needs-you)");
  if (s.contains("answer")) Line("answer", Str(s["answer"]["kind"]));  // the answer invariant's outcome (issue 34)
}

}  // namespace

int CmdExplain(int argc, char** argv) {
  std::string config_path, query;
  bool as_json = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::fputs(kExplainUsage, stdout);
      return 0;
    }
    if (!std::strcmp(argv[i], "--config") && i + 1 < argc) config_path = argv[++i];
    else if (!std::strcmp(argv[i], "--json")) as_json = true;
    else if (argv[i][0] != '-' && query.empty()) query = argv[i];
    else {
      return UsageError("explain", "unexpected argument '" + std::string(argv[i]) + "'", kExplainUsage);
    }
  }
  if (query.empty()) {
    return UsageError("explain", "TRIGGER is required", kExplainUsage);
  }
  auto config = LoadConfigOrReport(config_path);
  if (!config) return 2;
  auto engine = OpenExistingOrReport(*config, "explain");
  if (!engine) return 1;
  // The Engine (opened as the daemon left it) says which policy is in force; the read face tells.
  auto views = Views::Open((std::filesystem::path(config->data_dir) / "superagent.db").string());
  if (!views.ok()) {
    std::fprintf(stderr, "explain: %s\n", views.status().message().c_str());
    return 1;
  }
  auto story = (*views)->Explain(query, engine->CurrentPolicy(), SystemClock()->NowMs());
  if (!story.ok()) {
    std::fprintf(stderr, "explain: %s\n", story.status().message().c_str());
    return 1;
  }
  if (as_json) std::printf("%s\n", story->dump(2).c_str());
  else PrintStory(*story, config->policy_file, query);
  return 0;
}

}  // namespace superagent::app
