// The team's prompt directory (SPEC §7 level 4), read fresh on every call. Every file is read
// beneath the team directory (superagent/beneath.h): a section or skill that is a symbolic link
// pointing out of it is a problem, never text in a prompt.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "superagent/beneath.h"
#include "superagent/prompts.h"
#include "superagent/text.h"

namespace superagent {

namespace fs = std::filesystem;

namespace {

bool IsSectionName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'; });
}

// The file `rel` beneath the team directory, trimmed and bounded; problems noted against `rel`.
// A file that is not UTF-8 is left out whole: repaired, it would reach a model as U+FFFD noise
// (a binary dropped into the directory, a file saved in GBK). With `whole`, a file over the bound
// is left out too instead of cut: a skill with its middle missing is a wrong procedure.
bool ReadTeamFile(const std::string& team_dir, const std::string& rel, std::size_t max_chars, bool whole,
                  TeamFiles* team, std::string* text) {
  // A file far over the bound (a log or a database dropped in the directory) is not read at all.
  auto fd = beneath::Open(team_dir, rel, O_RDONLY | O_NONBLOCK);
  if (fd.ok()) {
    struct stat st {};
    const bool stated = ::fstat(*fd, &st) == 0;
    ::close(*fd);
    const std::uint64_t cap = std::max<std::uint64_t>(1u << 20, 4 * static_cast<std::uint64_t>(max_chars));
    if (stated && static_cast<std::uint64_t>(st.st_size) > cap) {
      team->problems.push_back(rel + ": ignored: " + std::to_string(st.st_size) + " bytes, far over " +
                               std::to_string(max_chars) + " characters");
      return false;
    }
  }
  auto raw = beneath::ReadFile(team_dir, rel);
  if (!raw.ok()) {
    team->problems.push_back(rel + ": cannot be read: " + raw.status().message());
    return false;
  }
  if (!text::IsValid(*raw)) {
    team->problems.push_back(rel + ": ignored: not valid UTF-8");
    return false;
  }
  if (whole && text::CountCodePoints(text::Trim(*raw)) > max_chars) {
    team->problems.push_back(rel + ": ignored: longer than " + std::to_string(max_chars) + " characters");
    return false;
  }
  bool cut = false;
  *text = text::CutMiddle(text::Trim(*raw), max_chars, &cut);
  if (cut) team->problems.push_back(rel + ": longer than " + std::to_string(max_chars) + " characters; its middle was cut");
  return true;
}

// A subdirectory of the team directory that resolves beneath it: "sections" or "skills" being
// a link to some other directory would list that directory's names as problems.
bool Beneath(const std::string& team_dir, const std::string& sub, TeamFiles* team) {
  auto fd = beneath::Open(team_dir, sub, O_RDONLY | O_DIRECTORY);
  if (fd.ok()) {
    ::close(*fd);
    return true;
  }
  if (fd.status().code() != Status::Code::kNotFound) team->problems.push_back(sub + ": ignored: " + fd.status().message());
  return false;
}

std::string Description(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    line = text::Trim(line);
    while (!line.empty() && line.front() == '#') line.erase(0, 1);
    line = text::Trim(line);
    if (!line.empty()) return text::Cut(line, 200);
  }
  return "(no description)";
}

// Entries of `dir` sorted by name, so the prompt does not depend on directory order.
std::vector<fs::directory_entry> Sorted(const fs::path& dir, std::error_code& ec) {
  std::vector<fs::directory_entry> out;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) out.push_back(*it);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.path().filename() < b.path().filename(); });
  return out;
}

}  // namespace

TeamFiles LoadTeamFiles(const std::string& team_dir, std::size_t max_file_chars) {
  TeamFiles team;
  if (team_dir.empty()) return team;
  std::error_code ec;
  if (!fs::is_directory(team_dir, ec)) {
    team.problems.push_back(team_dir + ": prompts.team_dir is not a readable directory");
    return team;
  }

  const fs::path sections = fs::path(team_dir) / "sections";
  if (Beneath(team_dir, "sections", &team)) {
    for (const auto& entry : Sorted(sections, ec)) {
      const fs::path& p = entry.path();
      if (p.extension() != ".md" || !entry.is_regular_file(ec)) continue;
      const std::string name = p.stem().string();
      const std::string rel = "sections/" + p.filename().string();
      if (!IsSectionName(name)) {
        team.problems.push_back(rel + ": ignored: section names are lower-case letters, digits, '-' and '_'");
        continue;
      }
      std::string text;
      if (ReadTeamFile(team_dir, rel, max_file_chars, /*whole=*/false, &team, &text))
        team.sections.push_back({4, name, "team:" + rel, text, false});
    }
  }

  const fs::path skills = fs::path(team_dir) / "skills";
  if (Beneath(team_dir, "skills", &team)) {
    for (const auto& entry : Sorted(skills, ec)) {
      const fs::path& p = entry.path();
      std::string name, rel;
      if (entry.is_directory(ec) && fs::is_regular_file(p / "SKILL.md", ec)) {
        name = p.filename().string();
        rel = "skills/" + name + "/SKILL.md";
      } else if (p.extension() == ".md" && entry.is_regular_file(ec)) {
        name = p.stem().string();
        rel = "skills/" + p.filename().string();
      } else {
        continue;
      }
      if (!IsSectionName(name)) {
        team.problems.push_back(rel + ": ignored: skill names are lower-case letters, digits, '-' and '_'");
        continue;
      }
      std::string text;
      if (!ReadTeamFile(team_dir, rel, max_file_chars, /*whole=*/true, &team, &text) || text.empty()) continue;
      team.skills.push_back({name, Description(text), text, "team:" + rel});
    }
  }
  return team;
}

}  // namespace superagent
