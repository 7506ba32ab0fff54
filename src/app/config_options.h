// ModuleOptions: the modules' own Options as the config's key table fills them. A row of the table
// (ConfigKeys(), config.cpp) whose value goes to a module as it is — or converted: seconds to
// milliseconds, a variable's NAME to the secret it holds, a price to a number — names that option
// in the row, so adding a key means writing one row, not a row and a copy in app/wiring.cpp.
// Wiring (app/wiring.h) starts from these and adds only what is computed from several keys or
// from the host: the git remote, the sandbox's hidden paths, a CLI's program found in PATH, the
// App's tokens, warnings and the errors that name a key.
#pragma once

#include <string_view>

#include "app/config.h"
#include "superagent/engine.h"
#include "superagent/exec.h"
#include "superagent/feishu.h"
#include "superagent/github.h"
#include "superagent/github_app.h"
#include "superagent/llm.h"
#include "superagent/model_assessor.h"
#include "superagent/panel.h"

namespace superagent::app {

// One coding CLI block's share (execution.claude_code, .codex, .gemini_cli, .qwen_code).
struct CodingCliOptions {
  // binary as written (wiring looks it up in PATH), model, args, allowed_commands, turn_ms.
  exec::CliExecutorOptions cli;
  // upstream, api_key (the secret's value) and the prices; wiring sets the wire from the executor.
  exec::ModelGatewayOptions gateway;
};

// Holds secret values (tokens, keys, the panel password): never log it. Every member not named by
// a row keeps its module's own default.
struct ModuleOptions {
  // github.*: client.api_url and client.token (auth: token), source (repo, bot_login,
  // webhook_secret, poll_interval_ms, read_*), merge_token, merge_as_agent, pull_request_origin.
  github::IntegrationOptions github;
  // github.* for auth: app: api_url, app_id, installation_id, repo, and private_key_pem as the
  // variable holds it (wiring restores an EnvironmentFile's "\n" line breaks).
  github::AppAuthOptions github_app;
  // feishu.*: client.api_url, client.app_id, client.app_secret, source (encrypt_key,
  // verification_token, poll_interval_ms, thread_reads_per_round).
  feishu::IntegrationOptions feishu;
  llm::ChatOptions chat;           // llm.*: the endpoint of the assessor and of the builtin worker
  ModelAssessorOptions assessor;   // model, repo, team_dir
  // execution.*: workspace.prepare, runner.nice, runner.sandbox.network and .pass_env, sandbox,
  // executor, command, slots, worker.team_dir and .ui_paths. Its cli, gateway, chat and model are
  // left at their defaults: wiring takes them from the block execution.executor chooses.
  exec::ExecutionOptions execution;
  CodingCliOptions claude_code, codex, gemini_cli, qwen_code;
  panel::PanelContext panel;  // listen, password_env, password (the secret), slots_configured
  // eval_timeout_ms, eval_max_attempts, quarantine_after, ci_fix_attempts, panel_url (as written).
  EngineOptions engine;

  // The block of the coding CLI `executor` names ("claude-code", ...); null for any other name.
  const CodingCliOptions* ChosenCli(std::string_view executor) const;
};

// Every row's value of `config` at the row's destinations (ConfigKey::destinations), converted as
// the row says; secrets are read with ResolveSecret now. The rest of the result is the modules'
// own defaults.
ModuleOptions ModuleOptionsFor(const Config& config);

}  // namespace superagent::app
