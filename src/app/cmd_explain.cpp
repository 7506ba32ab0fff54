// superagent explain TRIGGER [--config FILE] [--json]
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "app/commands.h"
#include "app/config.h"
#include "superagent/engine.h"
#include "superagent/text.h"

namespace superagent::app {
namespace {

const char kUsage[] =
    "usage: superagent explain TRIGGER [--config FILE] [--json]\n"
    "\n"
    "Prints one message's whole story from the store: how it arrived, its intake outcome (and\n"
    "filter reason), its Threads, every Eval and Decision with the Gate's strength and reason,\n"
    "the Tickets it reached or created with their Mandate, and the messages sent.\n"
    "TRIGGER is a Trigger id (e.g. feishu:om_123) or the message's URL (a GitHub html_url).\n"
    "Reads only; safe while the daemon runs.\n";

void Line(const char* label, const std::string& value) { std::printf("  %-14s %s\n", label, value.c_str()); }

std::string Str(const nlohmann::json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); }

void PrintStory(const nlohmann::json& s) {
  const auto& t = s["trigger"];
  std::printf("%s\n", Str(t["id"]).c_str());
  Line("summary", Str(s["summary"]));
  Line("from", Str(t["source"]) + " " + Str(t["scope"]) + " by " + (t["actor"].is_null() ? "CI" : Str(t["actor"])) +
                   (t["human"].get<bool>() ? "" : " (bot)") + (t["addressed"].get<bool>() ? ", addressed" : ""));
  Line("at", Str(t["at"]));
  Line("arrived", Str(s["arrival"]["via"]) + " at " + Str(s["arrival"]["received_at"]));
  std::string threads;
  for (const auto& th : t["threads"]) threads += (threads.empty() ? "" : ", ") + Str(th);
  Line("threads", threads);
  Line("intake", Str(s["intake"]["outcome"]) +
                     (s["intake"].contains("filter_reason") ? " (" + Str(s["intake"]["filter_reason"]) + ")" : ""));
  Line("text", text::Cut(Str(t["text"]), 200));
  for (const auto& e : s.value("evals", nlohmann::json::array())) {
    std::string line = "eval " + Str(e["eval"]) + ": gate " + Str(e["gate"]["strength"]) + " (" +
                       Str(e["gate"]["reason"]) + ")";
    if (e.contains("decision"))
      line += " -> " + Str(e["decision"]["outcome"]) + (e["decision"].value("would_accept", false) ? " (would_accept)" : "") +
              ": " + Str(e["decision"]["reason"]) + " [policy v" + Str(e["decision"]["policy_version"]) + "]";
    Line("eval", line);
  }
  if (s.contains("eval_queue")) Line("queued", "attempts " + Str(s["eval_queue"]["attempts"]));
  for (const auto& r : s.value("tickets_reached", nlohmann::json::array()))
    Line("reached", "ticket " + Str(r["ticket"]) + " as " + Str(r["as"]) + " (" + Str(r["state"]) + ")");
  if (s.contains("ticket_created")) {
    const auto& tk = s["ticket_created"];
    Line("ticket", Str(tk["id"]) + " " + Str(tk["stage"]) + ": " + Str(tk["scope"]));
    if (tk.contains("mandate")) {
      const auto& m = tk["mandate"];
      Line("mandate", Str(m["strength"]) + " via " + Str(m["admission"]) + ", sender " + Str(m["sender"]) +
                          ", policy v" + Str(m["policy_version"]) + ", " + Str(m["status"]));
    }
  }
  for (const auto& r : s.value("receipts", nlohmann::json::array()))
    Line("message", Str(r["kind"]) + " " + Str(r["status"]) + " on " + Str(r["channel"]) + " (" + Str(r["id"]) + ")");
  for (const auto& q : s.value("set_aside", nlohmann::json::array()))
    Line("set aside", Str(q["what"]) + ": " + Str(q["reason"]) + " (retry from the panel's Needs-you)");
}

}  // namespace

int CmdExplain(int argc, char** argv) {
  std::string config_path, query;
  bool as_json = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (!std::strcmp(argv[i], "--config") && i + 1 < argc) config_path = argv[++i];
    else if (!std::strcmp(argv[i], "--json")) as_json = true;
    else if (argv[i][0] != '-' && query.empty()) query = argv[i];
    else {
      std::fprintf(stderr, "explain: unexpected argument '%s'\n\n%s", argv[i], kUsage);
      return 2;
    }
  }
  if (query.empty()) {
    std::fprintf(stderr, "explain: TRIGGER is required\n\n%s", kUsage);
    return 2;
  }
  auto config = LoadConfigOrReport(config_path);
  if (!config) return 2;
  auto engine = OpenExistingOrReport(*config, "explain");
  if (!engine) return 1;
  auto story = engine->Explain(query);
  if (!story.ok()) {
    std::fprintf(stderr, "explain: %s\n", story.status().message().c_str());
    return 1;
  }
  if (as_json) std::printf("%s\n", story->dump(2).c_str());
  else PrintStory(*story);
  return 0;
}

}  // namespace superagent::app
