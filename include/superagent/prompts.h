// Prompts: assembled per call by the authority ladder of SPEC §7.
//
//   level 1  host facts (identity, permissions, reply purpose, length limits)   never overridable
//   level 2  built-in sections                                                  team may replace
//   level 3  requirements of the team rules that apply                          per rule
//   level 4  team sections and skills (files, re-read on every call)            team's own
//   level 5  external text (messages, comments, tickets), last, fenced as data  never instructions
//
// A prompt only changes what the model is told. What an answer *means* (permission, Mandates,
// tool checks) is code elsewhere and does not read anything assembled here. This module never
// touches the network.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "superagent/assessment.h"

namespace superagent {

// One block of a prompt and its place on the ladder.
struct PromptSection {
  int level = 0;       // 1..5
  std::string name;    // stable: a team file named like a level-2 section replaces it
  std::string origin;  // "host", "built-in", "rule", "team:sections/x.md", "team:skills/y.md", "external"
  std::string text;
  bool call_specific = false;  // level 1 facts about this call: sent at the head of the user message
};

struct TeamSkill {
  std::string name;
  std::string description;  // first non-empty line, without a leading '#'
  std::string text;
  std::string origin;       // "team:skills/<name>.md" or "team:skills/<name>/SKILL.md"
};

// What the team's prompt directory holds right now.
struct TeamFiles {
  std::vector<PromptSection> sections;  // sections/<name>.md, sorted by name, level 4
  std::vector<TeamSkill> skills;        // skills/<name>.md and skills/<name>/SKILL.md, sorted by name
  std::vector<std::string> problems;    // unreadable files, names that are not [a-z0-9_-]+, cuts
};

// Reads `team_dir` now. Nothing is cached on purpose: an edit applies to the very next call,
// with no restart (SPEC §7). An empty `team_dir` gives nothing; a missing one is a problem.
// A section is cut to `max_file_chars` with a visible marker; a skill over it is left out (a
// procedure with its middle missing misleads). A file that is not valid UTF-8, or of more than
// max(1 MiB, 4 × max_file_chars) bytes, is left out. Each leaving-out is a problem.
TeamFiles LoadTeamFiles(const std::string& team_dir, std::size_t max_file_chars = 16'000);

// An assembled prompt: the system message carries levels 1–4, the user message this call's
// level-1 facts followed by all level-5 data.
struct Prompt {
  std::vector<PromptSection> sections;  // in the order sent
  std::string system;
  std::string user;
  std::vector<std::string> cuts;      // every shortening done to bound the input, one line each
  std::vector<std::string> problems;  // team-file problems (the prompt is still usable)
};

// Keeps the ladder's order whatever order sections are added in, and lets team sections replace
// built-in ones by name — but never a host fact.
class PromptBuilder {
 public:
  void HostFact(std::string name, std::string text);
  void CallFact(std::string name, std::string text);  // level 1, specific to this call
  void BuiltIn(std::string name, std::string text);
  void RuleRequirement(std::string name, std::string text);
  // Team sections: one named like a built-in replaces it (keeping level 2's place); the others
  // join level 4. Skills join level 4 as an index (name: description) or, with `skill_bodies`,
  // in full. Problems are carried into the Prompt.
  void Team(const TeamFiles& team, bool skill_bodies);
  // Level 5. `fenced` must come from FenceData (or be code-written markers between fences).
  void Data(std::string name, std::string fenced);
  void Cut(std::string what) { cuts_.push_back(std::move(what)); }

  Prompt Build() const;

 private:
  std::vector<PromptSection> sections_;
  std::vector<std::string> cuts_, problems_;
};

// Opening and closing marks of external text. Inside data, any run of three or more '<' or
// '>' is broken up, so a message cannot close its fence and speak as the prompt.
inline constexpr std::string_view kDataOpen = "<<<DATA";
inline constexpr std::string_view kDataClose = "DATA>>>";
std::string NeutraliseFences(std::string_view text);

// "<<<DATA kind k1="v1" k2="v2"\n<text>\nDATA>>>". Attribute values are made one line and
// quoted; text is neutralised.
std::string FenceData(std::string_view kind, const std::vector<std::pair<std::string, std::string>>& attrs,
                      std::string_view text);

// Shortens `text` to about `max_chars` code points by cutting out its middle (the start holds
// the address, the end often the actual ask), leaving "[… N characters cut …]"; text::CutMiddle
// (superagent/text.h) under its prompt name. Sets *cut when it shortened.
std::string CutMiddle(std::string_view text, std::size_t max_chars, bool* cut = nullptr);

// Bounds on the external part of an assessment prompt.
struct PromptLimits {
  std::size_t message_chars = 4'000;   // one message's text
  std::size_t batch_chars = 24'000;    // all messages of the batch together
  std::size_t history_chars = 16'000;  // earlier messages of the Thread together
  std::size_t tickets = 30;            // Tickets listed (newest first)
  // The Engine's Thread snapshot size (EngineOptions::history_limit): a full window means the
  // Thread has older messages that were never given to the Eval, and the prompt says so.
  std::size_t history_window = 50;
  std::size_t team_file_chars = 16'000;
};

struct AssessmentPromptInput {
  const EvalJob* job = nullptr;
  const std::vector<const Candidate*>* candidates = nullptr;  // gate filled in
  const Policy* policy = nullptr;
  std::string agent_name = "superagent";
  std::string repo;  // "owner/name", "" when unknown
  TeamFiles team;
  PromptLimits limits;
};

// The assessment prompt (SPEC §5): the model must answer by calling `decide`.
Prompt BuildAssessmentPrompt(const AssessmentPromptInput& in);

// Names of the built-in level-2 sections of the assessment, in order (what a team may replace).
std::vector<std::string> AssessmentBuiltInSectionNames();

// Words as people count them: whitespace-separated runs, and every CJK character counts as one
// word (as word processors count East Asian text), so "≤ 100 words" also bounds Chinese.
std::size_t CountWords(std::string_view text);

// Word limit of an acknowledgement posted on `source`: chats (feishu, panel) 100 as SPEC §1
// says; elsewhere (GitHub comments) 200.
std::size_t AcknowledgementWordLimit(const std::string& source);

}  // namespace superagent
