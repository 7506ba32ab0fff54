// A question for a person as a structured form (SPEC §1: one concrete question at a time, as a
// structured human_action). One place decides what a form may hold, how it reads as a message, and
// which reply answers it — the worker's tool, the panel, GitHub and Feishu all use these.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/status.h"

namespace superagent {

inline constexpr std::size_t kMaxQuestionOptions = 9;        // one digit to type
inline constexpr std::size_t kMaxQuestionOptionChars = 200;  // code points per option

struct QuestionForm {
  std::vector<std::string> options;  // numbered from 1; none → the answer is free text
  bool free_text = true;             // an answer in the person's own words is accepted
  std::string purpose;               // "" (for the worker) or what code acts on the answer, e.g. "budget"
};

// Reads a HumanAction's `form` JSON: null or {} is a free-text question; otherwise
// {"options": [string...], "free_text": bool, "purpose": string}, every key optional. Options are
// trimmed, non-empty, distinct, at most kMaxQuestionOptions of at most kMaxQuestionOptionChars each;
// with no options free_text is forced true. Errors name the key, e.g. "form.options[2]: is empty".
Result<QuestionForm> ParseQuestionForm(const nlohmann::json& form);

// The stored form: {"options": [...], "free_text": bool} plus "purpose" when set.
nlohmann::json QuestionFormJson(const QuestionForm& form);

// The question as one chat or comment message: the question, the numbered options, and one line
// saying how to answer ("Reply with the number of your choice" / "or in your own words").
std::string RenderQuestion(const std::string& question, const QuestionForm& form);

// The structured answer a reply gives: {"option": n, "text": option} when the reply is an option's
// number ("2", "2.", "#2", "（2）", full-width digits too) or its text (case-insensitive, trimmed);
// {"text": reply} when free text is accepted; nullopt when the reply answers nothing.
std::optional<nlohmann::json> MatchAnswer(const QuestionForm& form, const std::string& reply);

// A panel answer checked against the form: a JSON string (read as a reply, MatchAnswer), or
// {"option": n} (1-based), or {"text": "..."}. InvalidArgument with a precise reason otherwise.
Result<nlohmann::json> NormalizeAnswer(const QuestionForm& form, const nlohmann::json& answer);

// What the answer said, for the discussion and the worker: the option's text, or the free text.
std::string AnswerText(const nlohmann::json& answer);

}  // namespace superagent
