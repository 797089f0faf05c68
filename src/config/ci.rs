//! The CI part of `Config` (SPEC §9): `--verify`, the budgets with their price table, and
//! the run's `--timeout`. Read by `run::ci::CiRun`, by the loop for the cost, and by the
//! finisher for the deadline.

use std::time::Duration;

use crate::config::cli::RunArgs;
use crate::config::provider::ProviderConfig;
use crate::config::settings::SettingsFiles;
use crate::error::Error;
use crate::run::budget::{Budget, Prices};
use crate::run::verify::VerifySpec;

/// Verification, limits and prices, validated.
#[derive(Debug, Clone, Default)]
pub(crate) struct CiConfig {
    pub(super) verify: Option<VerifySpec>,
    pub(super) budget: Budget,
    pub(super) prices: Prices,
    /// Time limit of the whole run (exit 124).
    pub(super) timeout: Option<Duration>,
}

impl CiConfig {
    /// The checks of this part's plain flags, before anything is read.
    pub(super) fn check_flags(args: &RunArgs) -> Result<(), Error> {
        if args.timeout.is_some_and(|t| t.is_zero()) {
            return Err(Error::Usage("--timeout must be longer than 0s".into()));
        }
        Ok(())
    }

    /// After `check_flags`. A cost limit needs a price for the model and for its fallback.
    pub(super) fn from_args(
        args: &RunArgs,
        files: &SettingsFiles,
        provider: &ProviderConfig,
    ) -> Result<Self, Error> {
        let ci = &args.ci;
        let verify = match &ci.verify {
            Some(c) if c.trim().is_empty() => {
                return Err(Error::Usage("--verify: the command is empty".into()));
            }
            Some(c) => Some(VerifySpec {
                command: c.clone(),
                max_rounds: ci.max_verify,
                timeout: ci.verify_timeout,
            }),
            None => None,
        };
        if ci.max_verify == 0 {
            return Err(Error::Usage("--max-verify must be at least 1".into()));
        }
        if ci.verify_timeout.is_zero() {
            return Err(Error::Usage(
                "--verify-timeout must be longer than 0s".into(),
            ));
        }
        if ci.max_tool_calls == Some(0) {
            return Err(Error::Usage("--max-tool-calls must be at least 1".into()));
        }
        if let Some(x) = ci.max_cost_usd
            && !(x.is_finite() && x > 0.0)
        {
            return Err(Error::Usage(format!(
                "--max-cost-usd must be a positive number of dollars, got {x}"
            )));
        }
        let prices = crate::run::budget::load_prices(files)?;
        if ci.max_cost_usd.is_some() {
            check_prices(&prices, provider)?;
        }
        let budget = Budget {
            max_tool_calls: ci.max_tool_calls,
            max_cost_usd: ci.max_cost_usd,
        };
        Ok(CiConfig {
            verify,
            budget,
            prices,
            timeout: args.timeout,
        })
    }

    pub(crate) fn verify(&self) -> Option<&VerifySpec> {
        self.verify.as_ref()
    }
    pub(crate) fn budget(&self) -> Budget {
        self.budget
    }
    pub(crate) fn prices(&self) -> &Prices {
        &self.prices
    }
    pub(crate) fn timeout(&self) -> Option<Duration> {
        self.timeout
    }
}

/// `--max-cost-usd` is computed from the price of every model that may answer.
fn check_prices(prices: &Prices, provider: &ProviderConfig) -> Result<(), Error> {
    let model = provider.model();
    if prices.lookup(model).is_none() {
        return Err(Error::Usage(format!(
            "--max-cost-usd: no price is known for the model {model:?}; add it under \"prices\" \
             in the settings file ({{\"prices\": {{\"{model}\": {{\"input\": 3, \"output\": 15}}}}}}, \
             USD per million tokens)"
        )));
    }
    if let Some(fallback) = provider.fallback_model()
        && prices.lookup(fallback).is_none()
    {
        return Err(Error::Usage(format!(
            "--max-cost-usd: no price is known for the --fallback-model {fallback:?}; add \
             it under \"prices\" in the settings file"
        )));
    }
    Ok(())
}
