//! Budgets (SPEC §9): the price table behind `cost_usd` and `--max-cost-usd`, and the
//! `--max-tool-calls` / `--max-cost-usd` checks made before each request. (The guard
//! against the same call made over and over is a dispatch refusal: `dispatch::repeat`.)
//!
//! Prices are USD per million tokens, built in for current Claude models (matched by the
//! longest id prefix, so dated ids and aliases both match) and overridable under the
//! `"prices"` key of the settings files.

use serde::Deserialize;
use serde_json::Value;

use crate::config::settings::SettingsFiles;
use crate::error::Error;
use crate::model::protocol::Usage;

/// Tokens per price unit (prices are per million tokens, MTok).
const TOKENS_PER_UNIT: f64 = 1_000_000.0;
/// Cache writes (5-minute TTL) cost 1.25 × input, reads 0.1 × input (Anthropic pricing),
/// the defaults when a settings price omits them.
const CACHE_WRITE_FACTOR: f64 = 1.25;
const CACHE_READ_FACTOR: f64 = 0.1;

/// USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Price {
    pub input: f64,
    pub output: f64,
    pub cache_write: f64,
    pub cache_read: f64,
}

const fn price(input: f64, output: f64) -> Price {
    Price {
        input,
        output,
        cache_write: input * CACHE_WRITE_FACTOR,
        cache_read: input * CACHE_READ_FACTOR,
    }
}

/// Built-in prices (list prices per MTok, standard context), longest prefix wins. Ids
/// are matched after dropping a vendor prefix (`anthropic.`, `us.anthropic.`).
const BUILTIN_PRICES: &[(&str, Price)] = &[
    // Opus 4 and 4.1 kept the Opus 3 price; Opus 4.5 and later are cheaper.
    ("claude-opus-4-20250514", price(15.0, 75.0)),
    ("claude-opus-4-0", price(15.0, 75.0)),
    ("claude-opus-4-1", price(15.0, 75.0)),
    ("claude-opus-4", price(5.0, 25.0)),
    ("claude-sonnet-4", price(3.0, 15.0)),
    ("claude-haiku-4", price(1.0, 5.0)),
    ("claude-3-7-sonnet", price(3.0, 15.0)),
    ("claude-3-5-sonnet", price(3.0, 15.0)),
    ("claude-3-5-haiku", price(0.8, 4.0)),
    ("claude-3-opus", price(15.0, 75.0)),
    (
        "claude-3-haiku",
        Price {
            input: 0.25,
            output: 1.25,
            cache_write: 0.30,
            cache_read: 0.03,
        },
    ),
];

/// The run's price table: settings overrides first, then the built-in table.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Prices {
    overrides: Vec<(String, Price)>,
}

impl Prices {
    /// The price of `model`: the longest matching override prefix, else the longest
    /// matching built-in prefix.
    pub(crate) fn lookup(&self, model: &str) -> Option<Price> {
        let longest = |table: &mut dyn Iterator<Item = (&str, Price)>, id: &str| {
            table
                .filter(|(prefix, _)| id.starts_with(prefix))
                .max_by_key(|(prefix, _)| prefix.len())
                .map(|(_, p)| p)
        };
        let id = model.to_ascii_lowercase();
        let mut overrides = self.overrides.iter().map(|(k, p)| (k.as_str(), *p));
        if let Some(p) = longest(&mut overrides, &id) {
            return Some(p);
        }
        let family = id.find("claude-").map_or(id.as_str(), |i| &id[i..]);
        longest(&mut BUILTIN_PRICES.iter().copied(), family)
    }

    /// What `usage` cost with `model`, or None when its price or the usage is unknown.
    pub(crate) fn cost(&self, model: &str, usage: &Usage) -> Option<f64> {
        if usage.unknown {
            return None; // the server reported no usage: the cost is unknown too
        }
        let p = self.lookup(model)?;
        let mtok = |n: u64| n as f64 / TOKENS_PER_UNIT;
        Some(
            mtok(usage.input_tokens) * p.input
                + mtok(usage.output_tokens) * p.output
                + mtok(usage.cache_creation_input_tokens) * p.cache_write
                + mtok(usage.cache_read_input_tokens) * p.cache_read,
        )
    }
}

/// Dollars to a nano-dollar, far below any one token's price: sums of floats otherwise
/// print as 0.0007170000000000002, and the nearest double to k / 1e9 prints as k / 1e9.
pub(crate) fn round_usd(x: f64) -> f64 {
    (x * 1e9).round() / 1e9
}

/// One price in a settings file; the cache prices default from the input price.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PriceSetting {
    input: f64,
    output: f64,
    cache_write: Option<f64>,
    cache_read: Option<f64>,
}

/// The `"prices"` sections of the settings files, in order (later wins). A bad price is
/// a usage error naming the file.
pub(crate) fn load_prices(files: &SettingsFiles) -> Result<Prices, Error> {
    let mut prices = Prices::default();
    for (label, table) in files.sections("prices") {
        read_prices_into(&mut prices, label, table)?;
    }
    Ok(prices)
}

fn read_prices_into(prices: &mut Prices, shown: &str, table: &Value) -> Result<(), Error> {
    let table = table.as_object().ok_or_else(|| {
        Error::Usage(format!(
            "{shown}: \"prices\" must be an object of model-id prefix → \
             {{\"input\", \"output\", \"cache_write\"?, \"cache_read\"?}} (USD per million tokens)"
        ))
    })?;
    for (prefix, v) in table {
        let p = PriceSetting::deserialize(v)
            .map_err(|e| Error::Usage(format!("{shown}: prices.{prefix}: {e}")))?;
        let price = Price {
            input: p.input,
            output: p.output,
            cache_write: p.cache_write.unwrap_or(p.input * CACHE_WRITE_FACTOR),
            cache_read: p.cache_read.unwrap_or(p.input * CACHE_READ_FACTOR),
        };
        let all = [
            price.input,
            price.output,
            price.cache_write,
            price.cache_read,
        ];
        if all.iter().any(|x| !x.is_finite() || *x < 0.0) {
            return Err(Error::Usage(format!(
                "{shown}: prices.{prefix}: prices must be finite and not negative"
            )));
        }
        let key = prefix.to_ascii_lowercase();
        prices.overrides.retain(|(k, _)| *k != key);
        prices.overrides.push((key, price));
    }
    Ok(())
}

/// `--max-tool-calls` and `--max-cost-usd`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Budget {
    pub max_tool_calls: Option<u32>,
    pub max_cost_usd: Option<f64>,
}

impl Budget {
    /// Why the next request must not be made, if a budget is used up.
    pub(crate) fn exceeded(&self, tool_calls: usize, cost_usd: Option<f64>) -> Option<String> {
        if let Some(max) = self.max_tool_calls
            && tool_calls >= max as usize
        {
            return Some(format!(
                "reached --max-tool-calls {max} ({tool_calls} tool calls made)"
            ));
        }
        if let (Some(max), Some(cost)) = (self.max_cost_usd, cost_usd)
            && cost >= max
        {
            return Some(format!(
                "reached --max-cost-usd {max} (the run cost ${cost:.4})"
            ));
        }
        None
    }
}

#[cfg(test)]
#[path = "budget_tests.rs"]
mod tests;
