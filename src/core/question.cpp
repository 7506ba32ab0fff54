// Structured questions (SPEC §1). Replies come from people typing in chat or on GitHub, so the
// matching is forgiving about form ("2.", "#2", full-width digits) and strict about meaning: a
// reply that names no option and is not accepted as free text answers nothing.
#include "superagent/question.h"

#include "superagent/text.h"

namespace superagent {

using nlohmann::json;

Result<QuestionForm> ParseQuestionForm(const json& form) {
  QuestionForm out;
  if (form.is_null()) return out;
  if (!form.is_object()) return Status::InvalidArgument("form: must be an object");
  if (auto it = form.find("options"); it != form.end() && !it->is_null()) {
    if (!it->is_array()) return Status::InvalidArgument("form.options: must be an array of strings");
    if (it->size() > kMaxQuestionOptions)
      return Status::InvalidArgument("form.options: at most " + std::to_string(kMaxQuestionOptions) + " options");
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& o = (*it)[i];
      const std::string where = "form.options[" + std::to_string(i) + "]: ";
      if (!o.is_string()) return Status::InvalidArgument(where + "must be a string");
      std::string text = text::Trim(text::Repair(o.get<std::string>()));
      if (text.empty()) return Status::InvalidArgument(where + "is empty");
      if (text::CountCodePoints(text) > kMaxQuestionOptionChars)
        return Status::InvalidArgument(where + "longer than " + std::to_string(kMaxQuestionOptionChars) + " characters");
      for (const std::string& earlier : out.options)
        if (text::AsciiLower(earlier) == text::AsciiLower(text)) return Status::InvalidArgument(where + "repeats an option");
      out.options.push_back(std::move(text));
    }
  }
  if (auto it = form.find("free_text"); it != form.end() && !it->is_null()) {
    if (!it->is_boolean()) return Status::InvalidArgument("form.free_text: must be true or false");
    out.free_text = it->get<bool>();
  }
  if (auto it = form.find("purpose"); it != form.end() && !it->is_null()) {
    if (!it->is_string()) return Status::InvalidArgument("form.purpose: must be a string");
    out.purpose = text::Cut(text::Repair(it->get<std::string>()), 40);
  }
  if (out.options.empty()) out.free_text = true;  // nothing to choose: the answer is words
  return out;
}

json QuestionFormJson(const QuestionForm& form) {
  json j{{"options", form.options}, {"free_text", form.free_text}};
  if (!form.purpose.empty()) j["purpose"] = form.purpose;
  return j;
}

std::string RenderQuestion(const std::string& question, const QuestionForm& form) {
  if (form.options.empty()) return question;
  std::string out = question + "\n";
  for (std::size_t i = 0; i < form.options.size(); ++i) out += "\n" + std::to_string(i + 1) + ". " + form.options[i];
  out += form.free_text ? "\n\nReply with the number of your choice, or in your own words."
                        : "\n\nReply with the number of your choice.";
  return out;
}

namespace {

// "2", "2.", "#2", "(2)", "（２）", "2、" → 2; anything else → 0.
std::size_t OptionNumber(std::string s) {
  // Full-width digits (U+FF10..U+FF19) and brackets read as their ASCII forms.
  for (const auto& [wide, narrow] : {std::pair<std::string, std::string>{"\xEF\xBC\x88", "("},
                                     {"\xEF\xBC\x89", ")"}, {"\xE3\x80\x81", "."}, {"\xE3\x80\x82", "."},
                                     {"\xEF\xBC\x8E", "."}, {"\xEF\xBC\x83", "#"}}) {
    for (std::size_t at = s.find(wide); at != std::string::npos; at = s.find(wide, at)) s.replace(at, wide.size(), narrow);
  }
  for (char d = 0; d <= 9; ++d) {
    const std::string wide{'\xEF', '\xBC', static_cast<char>('\x90' + d)};
    for (std::size_t at = s.find(wide); at != std::string::npos; at = s.find(wide, at))
      s.replace(at, wide.size(), std::string(1, static_cast<char>('0' + d)));
  }
  s = text::Trim(s);
  if (!s.empty() && s.front() == '#') s.erase(0, 1);
  if (s.size() >= 2 && s.front() == '(' && s.back() == ')') s = s.substr(1, s.size() - 2);
  if (!s.empty() && (s.back() == '.' || s.back() == ')')) s.pop_back();
  s = text::Trim(s);
  if (s.empty() || s.size() > 2) return 0;
  std::size_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return 0;
    n = n * 10 + static_cast<std::size_t>(c - '0');
  }
  return n;
}

}  // namespace

std::optional<json> MatchAnswer(const QuestionForm& form, const std::string& reply_in) {
  const std::string reply = text::Trim(text::Repair(reply_in));
  if (reply.empty()) return std::nullopt;
  if (const std::size_t n = OptionNumber(reply); n >= 1 && n <= form.options.size())
    return json{{"option", n}, {"text", form.options[n - 1]}};
  const std::string lower = text::AsciiLower(reply);
  for (std::size_t i = 0; i < form.options.size(); ++i)
    if (text::AsciiLower(form.options[i]) == lower) return json{{"option", i + 1}, {"text", form.options[i]}};
  if (form.free_text) return json{{"text", reply}};
  return std::nullopt;
}

Result<json> NormalizeAnswer(const QuestionForm& form, const json& answer) {
  if (answer.is_string()) {
    if (auto a = MatchAnswer(form, answer.get<std::string>())) return *a;
    return Status::InvalidArgument("the answer must be one of the options, 1 to " + std::to_string(form.options.size()));
  }
  if (!answer.is_object()) return Status::InvalidArgument("the answer must be text or {\"option\": n} or {\"text\": \"...\"}");
  if (auto it = answer.find("option"); it != answer.end()) {
    if (!it->is_number_integer() || it->get<std::int64_t>() < 1 ||
        it->get<std::int64_t>() > static_cast<std::int64_t>(form.options.size()))
      return Status::InvalidArgument("answer.option: must be a number from 1 to " + std::to_string(form.options.size()));
    const auto n = static_cast<std::size_t>(it->get<std::int64_t>());
    return json{{"option", n}, {"text", form.options[n - 1]}};
  }
  if (auto it = answer.find("text"); it != answer.end()) {
    if (!it->is_string()) return Status::InvalidArgument("answer.text: must be a string");
    const std::string t = text::Trim(text::Repair(it->get<std::string>()));
    if (t.empty()) return Status::InvalidArgument("the answer is empty");
    if (auto a = MatchAnswer(form, t)) return *a;
    return Status::InvalidArgument("this question takes one of its options, not free text");
  }
  return Status::InvalidArgument("the answer must have \"option\" or \"text\"");
}

std::string AnswerText(const json& answer) {
  if (answer.is_string()) return answer.get<std::string>();
  if (answer.is_object()) {
    if (auto it = answer.find("text"); it != answer.end() && it->is_string()) return it->get<std::string>();
    if (auto it = answer.find("option"); it != answer.end() && it->is_number_integer())
      return "option " + std::to_string(it->get<std::int64_t>());
  }
  return text::Dump(answer);
}

}  // namespace superagent
