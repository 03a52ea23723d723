//! STUB until branch `codec` lands: page content classes.
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ContentClass {
    Usemem,
    Zero,
    SameFilled,
    Random,
    Text,
    ProcessSample,
}

impl ContentClass {
    pub const ALL: &'static [ContentClass] = &[
        ContentClass::Usemem,
        ContentClass::Zero,
        ContentClass::SameFilled,
        ContentClass::Random,
        ContentClass::Text,
        ContentClass::ProcessSample,
    ];
    pub fn name(self) -> &'static str {
        match self {
            ContentClass::Usemem => "usemem",
            ContentClass::Zero => "zero",
            ContentClass::SameFilled => "same-filled",
            ContentClass::Random => "random",
            ContentClass::Text => "text",
            ContentClass::ProcessSample => "process-sample",
        }
    }
    pub fn is_zero(self, _page_key: u64) -> bool {
        self == ContentClass::Zero
    }
    pub fn same_filled(self, _page_key: u64) -> bool {
        matches!(self, ContentClass::Zero | ContentClass::SameFilled)
    }
}
