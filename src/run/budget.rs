//! Budgets (SPEC §9): the price table behind `cost_usd` and `--max-cost-usd`, and the
//! `--max-tool-calls` / `--max-cost-usd` checks made before each request. (The guard
//! against the same call made over and over is a dispatch refusal: `dispatch::repeat`.)
//!
//! With sub-agents running in parallel, each reserves what its next request can cost
//! before sending it (`Pool`): one turn, and the cost of its estimated input plus its
//! `max_tokens` of output, against what the run has spent and what the other sub-agents
//! have spent or reserved. A request that does not fit is not sent; the run stops
//! `budget` at the limit instead of past it.
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

/// What the run has counted so far outside the running sub-agents' own costs (read under
/// the run's record lock): its cost with the sub-agents that ended, its turns with every
/// sub-agent's finished ones, its tool calls with theirs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Spent {
    pub cost_usd: f64,
    pub turns: u32,
    pub tool_calls: usize,
}

/// What one request may cost, reserved before it is sent: its input as estimated from the
/// request's size, and all of its `max_tokens` as output.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub(crate) struct Reservation {
    pub cost_usd: f64,
    pub input_tokens: u64,
    pub max_tokens: u32,
}

impl Reservation {
    /// The reservation for a request of `input_tokens` with `max_tokens` at `price`.
    pub(crate) fn new(price: Price, input_tokens: u64, max_tokens: u32) -> Reservation {
        Reservation {
            cost_usd: round_usd(
                input_tokens as f64 / TOKENS_PER_UNIT * price.input
                    + f64::from(max_tokens) / TOKENS_PER_UNIT * price.output,
            ),
            input_tokens,
            max_tokens,
        }
    }
}

/// The limits the pool holds the sub-agents to: the run's.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Limits {
    pub max_turns: u32,
    pub budget: Budget,
}

/// One running sub-agent's share: its cost so far and its request in flight.
#[derive(Debug, Clone)]
struct Slot {
    id: String,
    spent_usd: f64,
    in_flight: Option<Reservation>,
}

/// The budgets the running sub-agents share. Locked after the run's record, never before.
#[derive(Debug, Default)]
pub(crate) struct Pool {
    slots: std::sync::Mutex<Vec<Slot>>,
    /// The first refusal: the run stops `budget` with it before its own next request.
    refused: std::sync::Mutex<Option<String>>,
}

impl Pool {
    /// Reserves sub-agent `id`'s next request (`next`: None when its price is unknown,
    /// then only turns and calls are reserved), its earlier requests now done and
    /// costing `own_usd`. `Err`: why it may not be sent (kept for the run too).
    pub(crate) fn reserve(
        &self,
        id: &str,
        limits: Limits,
        run: Spent,
        own_usd: f64,
        next: Option<Reservation>,
    ) -> Result<(), String> {
        use crate::util::sync::Locked;
        let mut slots = self.slots.locked();
        let others = slots.iter().filter(|s| s.id != id);
        let others_usd: f64 = others
            .clone()
            .map(|s| s.spent_usd + s.in_flight.map_or(0.0, |r| r.cost_usd))
            .sum();
        let others_in_flight = others.filter(|s| s.in_flight.is_some()).count() as u32;
        let refusal = if run.turns + others_in_flight + 1 > limits.max_turns {
            Some(format!(
                "reached --max-turns {}: {} turns taken and {others_in_flight} requested by                  other sub-agents leave none for this request",
                limits.max_turns, run.turns
            ))
        } else if let Some(max) = limits.budget.max_tool_calls
            && run.tool_calls >= max as usize
        {
            Some(format!(
                "reached --max-tool-calls {max} ({} tool calls made)",
                run.tool_calls
            ))
        } else if let (Some(max), Some(r)) = (limits.budget.max_cost_usd, next)
            && run.cost_usd + others_usd + own_usd + r.cost_usd > max
        {
            Some(format!(
                "reached --max-cost-usd {max}: the next request reserves ${:.4} ({} input \
                 tokens estimated, max_tokens {}), and with ${:.4} spent by the run, ${:.4} \
                 spent or reserved by the other sub-agents and ${:.4} by this one it could \
                 pass the limit",
                r.cost_usd, r.input_tokens, r.max_tokens, run.cost_usd, others_usd, own_usd
            ))
        } else {
            None
        };
        let slot = match slots.iter_mut().position(|s| s.id == id) {
            Some(i) => &mut slots[i],
            None => {
                slots.push(Slot {
                    id: id.to_string(),
                    spent_usd: 0.0,
                    in_flight: None,
                });
                let last = slots.len() - 1;
                &mut slots[last]
            }
        };
        slot.spent_usd = own_usd;
        match refusal {
            None => {
                slot.in_flight = Some(next.unwrap_or(Reservation {
                    cost_usd: 0.0,
                    input_tokens: 0,
                    max_tokens: 0,
                }));
                Ok(())
            }
            Some(why) => {
                slot.in_flight = None;
                self.refused.locked().get_or_insert_with(|| why.clone());
                Err(why)
            }
        }
    }

    /// Sub-agent `id` ended: its cost is the run's now (call with the run's record locked).
    pub(crate) fn release(&self, id: &str) {
        use crate::util::sync::Locked;
        self.slots.locked().retain(|s| s.id != id);
    }

    /// Why a sub-agent's request was refused, if one was: the run stops there too.
    pub(crate) fn refused(&self) -> Option<String> {
        use crate::util::sync::Locked;
        self.refused.locked().clone()
    }
}

#[cfg(test)]
#[path = "budget_tests.rs"]
mod tests;
