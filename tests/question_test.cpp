// Structured questions (SPEC §1, issue 22): what a form may hold, how it reads, which reply answers it.
#include <gtest/gtest.h>

#include "superagent/question.h"

namespace superagent::testing {
namespace {

using nlohmann::json;

QuestionForm Form(const json& j) {
  auto f = ParseQuestionForm(j);
  EXPECT_TRUE(f.ok()) << f.status().message();
  return f.ok() ? *f : QuestionForm{};
}

TEST(QuestionFormTest, NullOrEmptyIsAFreeTextQuestion) {
  for (const json& j : {json(nullptr), json::object(), json{{"options", json::array()}, {"free_text", false}}}) {
    QuestionForm f = Form(j);
    EXPECT_TRUE(f.options.empty());
    EXPECT_TRUE(f.free_text) << "with nothing to choose, the answer is words: " << j.dump();
  }
}

TEST(QuestionFormTest, OptionsAreTrimmedAndKeptInOrder) {
  QuestionForm f = Form({{"options", {"  保留旧名称 ", "Rename everywhere 🚀"}}, {"free_text", false}, {"purpose", "budget"}});
  ASSERT_EQ(f.options.size(), 2u);
  EXPECT_EQ(f.options[0], "保留旧名称");
  EXPECT_FALSE(f.free_text);
  EXPECT_EQ(f.purpose, "budget");
  EXPECT_EQ(QuestionFormJson(f), (json{{"options", {"保留旧名称", "Rename everywhere 🚀"}}, {"free_text", false}, {"purpose", "budget"}}));
}

TEST(QuestionFormTest, ABadFormIsRefusedNamingTheKey) {
  auto error = [](const json& j) {
    auto f = ParseQuestionForm(j);
    return f.ok() ? std::string("accepted") : f.status().message();
  };
  EXPECT_EQ(error("yes"), "form: must be an object");
  EXPECT_EQ(error({{"options", "a,b"}}), "form.options: must be an array of strings");
  EXPECT_EQ(error({{"options", {"a", 2}}}), "form.options[1]: must be a string");
  EXPECT_EQ(error({{"options", {"a", "  "}}}), "form.options[1]: is empty");
  EXPECT_EQ(error({{"options", {"Root", "root"}}}), "form.options[1]: repeats an option");
  EXPECT_EQ(error({{"options", json::array({"1", "2", "3", "4", "5", "6", "7", "8", "9", "10"})}}),
            "form.options: at most 9 options");
  EXPECT_EQ(error({{"options", {std::string(201, 'x')}}}), "form.options[0]: longer than 200 characters");
  EXPECT_EQ(error({{"free_text", "no"}}), "form.free_text: must be true or false");
  EXPECT_EQ(error({{"purpose", 3}}), "form.purpose: must be a string");
  // 200 Chinese characters are 600 bytes and still one allowed option: the limit counts characters.
  std::string zh;
  for (int i = 0; i < 200; ++i) zh += "字";
  EXPECT_EQ(error({{"options", {zh}}}), "accepted");
}

TEST(QuestionFormTest, InvalidUtf8InAnOptionIsRepaired) {
  QuestionForm f = Form({{"options", {std::string("ok\xff\xfe")}}});
  ASSERT_EQ(f.options.size(), 1u);
  EXPECT_EQ(f.options[0].rfind("ok", 0), 0u);
  EXPECT_NO_THROW((void)json(f.options[0]).dump()) << "the form is stored and shown as JSON";
}

TEST(QuestionFormTest, RenderedQuestionNumbersTheOptionsAndSaysHowToAnswer) {
  EXPECT_EQ(RenderQuestion("Which README?", Form({})), "Which README?");
  EXPECT_EQ(RenderQuestion("Which README?", Form({{"options", {"root", "docs/"}}})),
            "Which README?\n\n1. root\n2. docs/\n\nReply with the number of your choice, or in your own words.");
  EXPECT_EQ(RenderQuestion("继续吗？", Form({{"options", {"继续", "停止"}}, {"free_text", false}})),
            "继续吗？\n\n1. 继续\n2. 停止\n\nReply with the number of your choice.");
}

TEST(QuestionFormTest, ARepliedNumberOrOptionTextPicksThatOption) {
  QuestionForm f = Form({{"options", {"Keep the old name", "重命名"}}, {"free_text", false}});
  const json first{{"option", 1}, {"text", "Keep the old name"}};
  const json second{{"option", 2}, {"text", "重命名"}};
  for (const char* reply : {"1", " 1 ", "1.", "#1", "(1)", "keep the OLD name", "１", "（１）", "1、"})
    EXPECT_EQ(MatchAnswer(f, reply), first) << reply;
  for (const char* reply : {"2", "重命名", "２。", "#2\n"}) EXPECT_EQ(MatchAnswer(f, reply), second) << reply;
  for (const char* reply : {"0", "3", "12", "", "  ", "1 or 2", "maybe", "🚀", "\xff"})
    EXPECT_FALSE(MatchAnswer(f, reply).has_value()) << "a choice-only form takes no other reply: " << reply;
}

TEST(QuestionFormTest, FreeTextIsTheWholeReplyWhenItNamesNoOption) {
  QuestionForm f = Form({{"options", {"root", "docs"}}});
  EXPECT_EQ(MatchAnswer(f, "docs"), (json{{"option", 2}, {"text", "docs"}}));
  EXPECT_EQ(MatchAnswer(f, "  both, 谢谢 🙏 "), (json{{"text", "both, 谢谢 🙏"}}));
  EXPECT_EQ(MatchAnswer(Form({}), "3"), (json{{"text", "3"}})) << "with no options a number is just words";
}

TEST(QuestionFormTest, APanelAnswerIsCheckedAgainstTheForm) {
  QuestionForm f = Form({{"options", {"root", "docs"}}, {"free_text", false}});
  EXPECT_EQ(*NormalizeAnswer(f, {{"option", 2}}), (json{{"option", 2}, {"text", "docs"}}));
  EXPECT_EQ(*NormalizeAnswer(f, "root"), (json{{"option", 1}, {"text", "root"}}));
  EXPECT_EQ(*NormalizeAnswer(f, {{"text", "2"}}), (json{{"option", 2}, {"text", "docs"}}));
  auto error = [&](const QuestionForm& form, const json& a) {
    auto r = NormalizeAnswer(form, a);
    return r.ok() ? std::string("accepted") : r.status().message();
  };
  EXPECT_EQ(error(f, {{"option", 3}}), "answer.option: must be a number from 1 to 2");
  EXPECT_EQ(error(f, {{"option", "1"}}), "answer.option: must be a number from 1 to 2");
  EXPECT_EQ(error(f, {{"option", 0}}), "answer.option: must be a number from 1 to 2");
  EXPECT_EQ(error(f, {{"text", "both"}}), "this question takes one of its options, not free text");
  EXPECT_EQ(error(f, {{"text", 7}}), "answer.text: must be a string");
  EXPECT_EQ(error(f, {{"text", "   "}}), "the answer is empty");
  EXPECT_EQ(error(f, json::array()), "the answer must be text or {\"option\": n} or {\"text\": \"...\"}");
  EXPECT_EQ(error(f, json::object()), "the answer must have \"option\" or \"text\"");
  EXPECT_EQ(error(f, "both"), "the answer must be one of the options, 1 to 2");
  EXPECT_EQ(*NormalizeAnswer(Form({}), {{"text", "用 docs/ 的"}}), (json{{"text", "用 docs/ 的"}}));
}

TEST(QuestionFormTest, AnswerTextIsWhatWasAnswered) {
  EXPECT_EQ(AnswerText(json{{"option", 2}, {"text", "docs"}}), "docs");
  EXPECT_EQ(AnswerText(json{{"text", "both"}}), "both");
  EXPECT_EQ(AnswerText(json("root")), "root");
}

}  // namespace
}  // namespace superagent::testing
